#include "collector/parse/cgroup_parsers.h"

#include <gtest/gtest.h>

#include "collector/cgroup_files.h"

namespace statlet::parse {
namespace {

TEST(ParseU64, AcceptsNumbersWithNewline) {
  uint64_t v;
  EXPECT_TRUE(ParseU64("12345\n", &v));
  EXPECT_EQ(v, 12345u);
  EXPECT_FALSE(ParseU64("", &v));
  EXPECT_FALSE(ParseU64("12a", &v));
  EXPECT_FALSE(ParseU64("-1", &v));
  EXPECT_FALSE(ParseU64("99999999999999999999999", &v));
}

TEST(ParseLimit, MaxMeansUnlimited) {
  uint64_t v;
  ASSERT_TRUE(ParseLimit("max\n", &v));
  EXPECT_EQ(v, kUnlimited);
  ASSERT_TRUE(ParseLimit("62914560\n", &v));
  EXPECT_EQ(v, 62914560u);
  EXPECT_FALSE(ParseLimit("maximum", &v));
}

TEST(ParseV1Limit, PageRoundedLlongMaxIsUnlimited) {
  uint64_t v;
  ASSERT_TRUE(ParseV1Limit("9223372036854771712\n", &v));
  EXPECT_EQ(v, kUnlimited);
  ASSERT_TRUE(ParseV1Limit("104857600\n", &v));
  EXPECT_EQ(v, 104857600u);
  ASSERT_TRUE(ParseV1Quota("-1\n", &v));
  EXPECT_EQ(v, kUnlimited);
  ASSERT_TRUE(ParseV1Quota("50000\n", &v));
  EXPECT_EQ(v, 50000u);
  EXPECT_FALSE(ParseV1Quota("-x", &v));
}

TEST(ParseCpuMax, QuotaAndPeriod) {
  Opt<uint64_t> q, p;
  ASSERT_TRUE(ParseCpuMax("50000 100000\n", &q, &p));
  EXPECT_EQ(*q, 50000u);
  EXPECT_EQ(*p, 100000u);
  ASSERT_TRUE(ParseCpuMax("max 100000\n", &q, &p));
  EXPECT_EQ(*q, kUnlimited);
  EXPECT_FALSE(ParseCpuMax("max", &q, &p));
  EXPECT_FALSE(ParseCpuMax("1 2 3", &q, &p));
}

TEST(ParsePsi, SomeAndFull) {
  Psi psi;
  ASSERT_TRUE(
      ParsePsi("some avg10=43.96 avg60=9.37 avg300=2.01 total=5762041\n"
               "full avg10=1.50 avg60=0.00 avg300=0.00 total=5753841\n",
               &psi));
  ASSERT_TRUE(psi.some && psi.full);
  EXPECT_DOUBLE_EQ(psi.some->avg10, 43.96);
  EXPECT_DOUBLE_EQ(psi.some->avg300, 2.01);
  EXPECT_EQ(psi.some->total_us, 5762041u);
  EXPECT_EQ(psi.full->total_us, 5753841u);
  EXPECT_DOUBLE_EQ(psi.full->avg10, 1.5);
}

TEST(ParsePsi, MalformedLineCostsOnlyItself) {
  Psi psi;
  EXPECT_FALSE(
      ParsePsi("some avg10=x avg60=0 avg300=0 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7\n", &psi));
  EXPECT_FALSE(psi.some.has_value());
  ASSERT_TRUE(psi.full.has_value());
  EXPECT_EQ(psi.full->total_us, 7u);
}

TEST(ParseIoStat, DevicesAndKeys) {
  std::vector<IoDeviceStats> d;
  ASSERT_TRUE(
      ParseIoStat("1:0 rbytes=0 wbytes=33554432 rios=0 wios=32 dbytes=0 dios=0\n"
                  "8:16 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0 cost.wait=5\n",
                  &d));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].major, 1u);
  EXPECT_EQ(*d[0].write_bytes, 33554432u);
  EXPECT_EQ(*d[0].write_ios, 32u);
  EXPECT_EQ(d[1].minor, 16u);
  EXPECT_EQ(*d[1].read_bytes, 4096u);
}

TEST(ParseIoStat, EmptyFileHasNoDevices) {
  std::vector<IoDeviceStats> d;
  EXPECT_TRUE(ParseIoStat("", &d));
  EXPECT_TRUE(d.empty());
}

TEST(ParseBlkio, MergesBytesAndIosPerDevice) {
  std::vector<IoDeviceStats> d;
  ASSERT_TRUE(
      ParseBlkio("8:0 Read 4096\n8:0 Write 8192\n8:0 Sync 0\n8:0 Async 12288\n8:0 Discard 0\n8:0 Total 12288\n"
                 "Total 12288\n",
                 true, &d));
  ASSERT_TRUE(
      ParseBlkio("8:0 Read 1\n8:0 Write 2\n8:0 Sync 0\n8:0 Async 3\n8:0 Discard 0\n8:0 Total 3\nTotal 3\n", false, &d));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(*d[0].read_bytes, 4096u);
  EXPECT_EQ(*d[0].write_bytes, 8192u);
  EXPECT_EQ(*d[0].read_ios, 1u);
  EXPECT_EQ(*d[0].write_ios, 2u);
}

TEST(ParseNetDev, CountersInTheRightColumns) {
  const char* text =
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier "
      "compressed\n"
      "    lo:     100       2    0    0    0     0          0         0      100       2    0    0    0     0       0 "
      "         0\n"
      "  eth0: 1000000     700    1    2    0     0          0         0     5000      60    3    4    0     0       0 "
      "         0\n";
  std::vector<NetInterfaceStats> ifs;
  ASSERT_TRUE(ParseNetDev(text, &ifs));
  ASSERT_EQ(ifs.size(), 2u);
  EXPECT_EQ(ifs[1].name, "eth0");
  EXPECT_EQ(ifs[1].rx_bytes, 1000000u);
  EXPECT_EQ(ifs[1].rx_packets, 700u);
  EXPECT_EQ(ifs[1].rx_errors, 1u);
  EXPECT_EQ(ifs[1].rx_dropped, 2u);
  EXPECT_EQ(ifs[1].tx_bytes, 5000u);
  EXPECT_EQ(ifs[1].tx_packets, 60u);
  EXPECT_EQ(ifs[1].tx_errors, 3u);
  EXPECT_EQ(ifs[1].tx_dropped, 4u);
}

TEST(ParseNetDev, TruncatedLineIsRejectedOthersKept) {
  std::vector<NetInterfaceStats> ifs;
  EXPECT_FALSE(ParseNetDev("h1\nh2\n  eth0: 1 2 3\n    lo: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n", &ifs));
  ASSERT_EQ(ifs.size(), 1u);
  EXPECT_EQ(ifs[0].name, "lo");
  EXPECT_EQ(ifs[0].tx_bytes, 9u);
}

TEST(CountIds, CountsAndFinds) {
  bool contains;
  uint32_t first;
  EXPECT_EQ(CountIds("10\n20\n30\n", 20, &contains, &first), 3u);
  EXPECT_TRUE(contains);
  EXPECT_EQ(first, 10u);
  EXPECT_EQ(CountIds("", 20, &contains, &first), 0u);
  EXPECT_FALSE(contains);
}

TEST(CountIds, KeepsTheIdsWhenAsked) {
  bool contains;
  uint32_t first;
  std::vector<uint32_t> ids = {99};  // appended to, not replaced
  EXPECT_EQ(CountIds("7\n300\n12\n", 0, &contains, &first, &ids), 3u);
  EXPECT_EQ(ids, (std::vector<uint32_t>{99, 7, 300, 12}));
}

TEST(ParseHugepagesDirName, NamesSizesAsTheHugetlbController) {
  std::string size;
  ASSERT_TRUE(ParseHugepagesDirName("hugepages-2048kB", &size));
  EXPECT_EQ(size, "2MB");
  ASSERT_TRUE(ParseHugepagesDirName("hugepages-1048576kB", &size));
  EXPECT_EQ(size, "1GB");
  ASSERT_TRUE(ParseHugepagesDirName("hugepages-64kB", &size));  // arm64 contiguous PTEs
  EXPECT_EQ(size, "64KB");
  ASSERT_TRUE(ParseHugepagesDirName("hugepages-32768kB", &size));
  EXPECT_EQ(size, "32MB");
  EXPECT_FALSE(ParseHugepagesDirName("hugepages-kB", &size));
  EXPECT_FALSE(ParseHugepagesDirName("hugepages-2048", &size));
  EXPECT_FALSE(ParseHugepagesDirName("hugepages-0kB", &size));
  EXPECT_FALSE(ParseHugepagesDirName(".", &size));
}

TEST(ParseMaxOpenFilesSoft, ReadsTheSoftColumn) {
  const char* limits =
      "Limit                     Soft Limit           Hard Limit           Units     \n"
      "Max cpu time              unlimited            unlimited            seconds   \n"
      "Max processes             63438                63438                processes \n"
      "Max open files            1024                 1048576              files     \n"
      "Max locked memory         8388608              8388608              bytes     \n";
  uint64_t v = 0;
  ASSERT_TRUE(ParseMaxOpenFilesSoft(limits, &v));
  EXPECT_EQ(v, 1024u);
  ASSERT_TRUE(ParseMaxOpenFilesSoft("Max open files            unlimited            unlimited            files\n", &v));
  EXPECT_EQ(v, kUnlimited);
  EXPECT_FALSE(ParseMaxOpenFilesSoft("Max processes             63438                63438\n", &v));
  EXPECT_FALSE(
      ParseMaxOpenFilesSoft("Max open files            lots                 1048576              files\n", &v));
}

TEST(ParseMountSource, FindsTheMountOfADevice) {
  const char* mountinfo =
      "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
      "27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
      "40 27 254:0 /var/lib /mnt/bind rw,relatime shared:1 - ext4 /dev/vda rw\n"
      "41 27 8:17 / /data rw,relatime master:3 - xfs /dev/sdb1 rw,attr2\n";
  std::string src;
  ASSERT_TRUE(ParseMountSource(mountinfo, 8, 17, &src));
  EXPECT_EQ(src, "/dev/sdb1");
  ASSERT_TRUE(ParseMountSource(mountinfo, 254, 0, &src));
  EXPECT_EQ(src, "/dev/vda");
  ASSERT_TRUE(ParseMountSource(mountinfo, 0, 21, &src));
  EXPECT_EQ(src, "proc");
  EXPECT_FALSE(ParseMountSource(mountinfo, 8, 1, &src));
  EXPECT_FALSE(ParseMountSource("41 27 8:1 / /data rw\n", 8, 1, &src));  // no " - " part
}

TEST(ParseFlatKeyedInto, OutOfOrderAndUnknownKeys) {
  struct S {
    Opt<uint64_t> a, b, c;
  };
  const FlatKeyField<S> table[] = {{"a", &S::a}, {"b", &S::b, 1000}, {"c", &S::c}};
  S s;
  EXPECT_EQ(ParseFlatKeyedInto("c 3\nzzz 9\nb 2\na 1\nbad\n", table, &s), 1);
  EXPECT_EQ(*s.a, 1u);
  EXPECT_EQ(*s.b, 2000u);
  EXPECT_EQ(*s.c, 3u);
}

TEST(CpuWeight, KubeletConversionRoundTrips) {
  EXPECT_EQ(CpuSharesToWeight(2), 1u);
  EXPECT_EQ(CpuSharesToWeight(1024), 39u);
  EXPECT_EQ(CpuSharesToWeight(262144), 10000u);
  EXPECT_EQ(CpuWeightToShares(1), 2u);
  EXPECT_EQ(CpuWeightToShares(10000), 262144u);
}

}  // namespace
}  // namespace statlet::parse
