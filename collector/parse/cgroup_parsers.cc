#include "collector/parse/cgroup_parsers.h"

#include <charconv>

namespace statlet::parse {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

bool ParseDouble(std::string_view s, double* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Splits the next whitespace-separated token off *s.
std::string_view NextToken(std::string_view* s) {
  while (!s->empty() && (s->front() == ' ' || s->front() == '\t')) s->remove_prefix(1);
  size_t end = 0;
  while (end < s->size() && (*s)[end] != ' ' && (*s)[end] != '\t') ++end;
  std::string_view tok = s->substr(0, end);
  s->remove_prefix(end);
  return tok;
}

bool ParseDevice(std::string_view tok, uint32_t* major, uint32_t* minor) {
  size_t colon = tok.find(':');
  if (colon == std::string_view::npos) return false;
  uint64_t ma, mi;
  if (!ParseU64(tok.substr(0, colon), &ma) || !ParseU64(tok.substr(colon + 1), &mi)) return false;
  if (ma > UINT32_MAX || mi > UINT32_MAX) return false;
  *major = static_cast<uint32_t>(ma);
  *minor = static_cast<uint32_t>(mi);
  return true;
}

IoDeviceStats* FindOrAdd(std::vector<IoDeviceStats>* devs, uint32_t major, uint32_t minor) {
  for (auto& d : *devs) {
    if (d.major == major && d.minor == minor) return &d;
  }
  devs->push_back(IoDeviceStats{});
  devs->back().major = major;
  devs->back().minor = minor;
  return &devs->back();
}

}  // namespace

bool ParseU64(std::string_view s, uint64_t* out) {
  s = Trim(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool ParseLimit(std::string_view s, uint64_t* out) {
  s = Trim(s);
  if (s == "max") {
    *out = kUnlimited;
    return true;
  }
  return ParseU64(s, out);
}

bool ParseV1Limit(std::string_view s, uint64_t* out) {
  s = Trim(s);
  if (s == "-1" || s == "max") {
    *out = kUnlimited;
    return true;
  }
  if (!ParseU64(s, out)) return false;
  if (*out >= (uint64_t{1} << 62)) *out = kUnlimited;
  return true;
}

bool ParseV1Quota(std::string_view s, uint64_t* out) {
  s = Trim(s);
  if (!s.empty() && s.front() == '-') {
    int64_t v;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) return false;
    *out = kUnlimited;
    return true;
  }
  return ParseU64(s, out);
}

bool ParseCpuMax(std::string_view s, Opt<uint64_t>* quota_us, Opt<uint64_t>* period_us) {
  s = Trim(s);
  std::string_view q = NextToken(&s);
  std::string_view p = NextToken(&s);
  uint64_t qv, pv;
  if (!ParseLimit(q, &qv) || !ParseU64(p, &pv) || !Trim(s).empty()) return false;
  *quota_us = qv;
  *period_us = pv;
  return true;
}

bool ParsePsi(std::string_view s, Psi* out) {
  bool ok = true;
  while (!s.empty()) {
    std::string_view line = NextLine(&s);
    if (line.empty()) continue;
    std::string_view kind = NextToken(&line);
    PsiLine pl;
    int seen = 0;
    for (std::string_view tok = NextToken(&line); !tok.empty(); tok = NextToken(&line)) {
      size_t eq = tok.find('=');
      if (eq == std::string_view::npos) {
        seen = -100;
        break;
      }
      std::string_view k = tok.substr(0, eq), v = tok.substr(eq + 1);
      bool good = true;
      if (k == "avg10") good = ParseDouble(v, &pl.avg10), seen |= 1;
      else if (k == "avg60") good = ParseDouble(v, &pl.avg60), seen |= 2;
      else if (k == "avg300") good = ParseDouble(v, &pl.avg300), seen |= 4;
      else if (k == "total") good = ParseU64(v, &pl.total_us), seen |= 8;
      if (!good) {
        seen = -100;
        break;
      }
    }
    if (seen != 15) {
      ok = false;
      continue;
    }
    if (kind == "some") out->some = pl;
    else if (kind == "full") out->full = pl;
    else ok = false;
  }
  return ok;
}

bool ParseIoStat(std::string_view s, std::vector<IoDeviceStats>* out) {
  bool ok = true;
  while (!s.empty()) {
    std::string_view line = NextLine(&s);
    if (Trim(line).empty()) continue;
    IoDeviceStats d;
    if (!ParseDevice(NextToken(&line), &d.major, &d.minor)) {
      ok = false;
      continue;
    }
    for (std::string_view tok = NextToken(&line); !tok.empty(); tok = NextToken(&line)) {
      size_t eq = tok.find('=');
      uint64_t v;
      if (eq == std::string_view::npos || !ParseU64(tok.substr(eq + 1), &v)) {
        ok = false;
        continue;
      }
      std::string_view k = tok.substr(0, eq);
      if (k == "rbytes") d.read_bytes = v;
      else if (k == "wbytes") d.write_bytes = v;
      else if (k == "rios") d.read_ios = v;
      else if (k == "wios") d.write_ios = v;
      else if (k == "dbytes") d.discard_bytes = v;
      else if (k == "dios") d.discard_ios = v;
      else if (k == "cost.usage") d.cost_usage_us = v;
      else if (k == "cost.wait") d.cost_wait_us = v;
      else if (k == "cost.indebt") d.cost_indebt_us = v;
      else if (k == "cost.indelay") d.cost_indelay_us = v;
      // other keys (cost.vrate, rlat, ...) belong to io controllers we do not report
    }
    out->push_back(std::move(d));
  }
  return ok;
}

bool ParseBlkio(std::string_view s, bool bytes, std::vector<IoDeviceStats>* devices) {
  bool ok = true;
  while (!s.empty()) {
    std::string_view line = NextLine(&s);
    if (Trim(line).empty()) continue;
    std::string_view dev = NextToken(&line);
    std::string_view op = NextToken(&line);
    std::string_view val = NextToken(&line);
    uint64_t v;
    if (dev == "Total") continue;  // the grand total line: "Total N"
    uint32_t major, minor;
    if (!ParseDevice(dev, &major, &minor) || !ParseU64(val, &v)) {
      ok = false;
      continue;
    }
    IoDeviceStats* d = FindOrAdd(devices, major, minor);
    if (op == "Read") (bytes ? d->read_bytes : d->read_ios) = v;
    else if (op == "Write") (bytes ? d->write_bytes : d->write_ios) = v;
    else if (op == "Discard") (bytes ? d->discard_bytes : d->discard_ios) = v;
    else if (op != "Sync" && op != "Async" && op != "Total") ok = false;
  }
  return ok;
}

bool ParseNetDev(std::string_view s, std::vector<NetInterfaceStats>* out) {
  bool ok = true;
  // Skip the two header lines ("Inter-|   Receive ..." and " face |bytes ...").
  for (int i = 0; i < 2 && !s.empty(); ++i) NextLine(&s);
  while (!s.empty()) {
    std::string_view line = NextLine(&s);
    if (Trim(line).empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      ok = false;
      continue;
    }
    NetInterfaceStats st;
    std::string_view name = Trim(line.substr(0, colon));
    if (name.empty()) {
      ok = false;
      continue;
    }
    st.name.assign(name);
    std::string_view rest = line.substr(colon + 1);
    uint64_t f[16];
    int n = 0;
    for (; n < 16; ++n) {
      std::string_view tok = NextToken(&rest);
      if (tok.empty() || !ParseU64(tok, &f[n])) break;
    }
    if (n != 16) {
      ok = false;
      continue;
    }
    // rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes packets errs drop ...
    st.rx_bytes = f[0];
    st.rx_packets = f[1];
    st.rx_errors = f[2];
    st.rx_dropped = f[3];
    st.tx_bytes = f[8];
    st.tx_packets = f[9];
    st.tx_errors = f[10];
    st.tx_dropped = f[11];
    out->push_back(std::move(st));
  }
  return ok;
}

bool ParseU64List(std::string_view s, std::vector<uint64_t>* out) {
  bool ok = true;
  s = Trim(s);
  while (!s.empty()) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\n')) s.remove_prefix(1);
    size_t end = 0;
    while (end < s.size() && s[end] != ' ' && s[end] != '\n') ++end;
    if (end == 0) break;
    uint64_t v;
    if (ParseU64(s.substr(0, end), &v)) out->push_back(v);
    else ok = false;
    s.remove_prefix(end);
  }
  return ok;
}

uint64_t CountIds(std::string_view s, uint32_t wanted, bool* contains, uint32_t* first, std::vector<uint32_t>* ids) {
  uint64_t n = 0;
  *contains = false;
  *first = 0;
  const char* p = s.data();
  const char* end = p + s.size();
  while (p < end) {
    uint32_t v = 0;
    const char* start = p;
    while (p < end && *p >= '0' && *p <= '9') v = v * 10 + static_cast<uint32_t>(*p++ - '0');
    if (p != start) {
      if (n == 0) *first = v;
      ++n;
      if (ids != nullptr) ids->push_back(v);
      if (v == wanted && wanted != 0) *contains = true;
    }
    while (p < end && (*p < '0' || *p > '9')) ++p;
  }
  return n;
}

bool ParseHugepagesDirName(std::string_view name, std::string* page_size) {
  constexpr std::string_view kPrefix = "hugepages-", kSuffix = "kB";
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.substr(0, kPrefix.size()) != kPrefix ||
      name.substr(name.size() - kSuffix.size()) != kSuffix) {
    return false;
  }
  uint64_t kb;
  if (!ParseU64(name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size()), &kb) || kb == 0 ||
      kb > (uint64_t{1} << 40)) {
    return false;
  }
  // The kernel's own naming (mm/hugetlb_cgroup.c): whole GB, else whole MB, else KB.
  constexpr uint64_t kMb = 1024, kGb = 1024 * 1024;
  if (kb >= kGb) *page_size = std::to_string(kb / kGb) + "GB";
  else if (kb >= kMb) *page_size = std::to_string(kb / kMb) + "MB";
  else *page_size = std::to_string(kb) + "KB";
  return true;
}

bool ParseMaxOpenFilesSoft(std::string_view s, uint64_t* soft) {
  // "Max open files            1024                 1048576              files     "
  constexpr std::string_view kName = "Max open files";
  while (!s.empty()) {
    std::string_view line = NextLine(&s);
    if (line.substr(0, kName.size()) != kName) continue;
    line.remove_prefix(kName.size());
    size_t start = line.find_first_not_of(' ');
    if (start == std::string_view::npos) return false;
    line.remove_prefix(start);
    std::string_view value = line.substr(0, line.find(' '));
    if (value == "unlimited") {
      *soft = kUnlimited;
      return true;
    }
    return ParseU64(value, soft);
  }
  return false;
}

bool ParseMountSource(std::string_view mountinfo, uint32_t major, uint32_t minor, std::string* source) {
  // "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue"
  while (!mountinfo.empty()) {
    std::string_view line = NextLine(&mountinfo);
    // Third field: maj:min.
    size_t a = line.find(' ');
    if (a == std::string_view::npos) continue;
    size_t b = line.find(' ', a + 1);
    if (b == std::string_view::npos) continue;
    size_t c = line.find(' ', b + 1);
    if (c == std::string_view::npos) continue;
    std::string_view dev = line.substr(b + 1, c - b - 1);
    size_t colon = dev.find(':');
    uint64_t ma, mi;
    if (colon == std::string_view::npos || !ParseU64(dev.substr(0, colon), &ma) ||
        !ParseU64(dev.substr(colon + 1), &mi) || ma != major || mi != minor) {
      continue;
    }
    // After " - ": fstype, then the source.
    size_t dash = line.find(" - ", c);
    if (dash == std::string_view::npos) continue;
    std::string_view rest = line.substr(dash + 3);
    size_t sp = rest.find(' ');
    if (sp == std::string_view::npos) continue;
    rest.remove_prefix(sp + 1);
    std::string_view src = rest.substr(0, rest.find(' '));
    if (src.empty()) continue;
    source->assign(src);
    return true;
  }
  return false;
}

}  // namespace statlet::parse
