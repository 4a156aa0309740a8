#include "collector/cgroup_path_classifier.h"

#include <gtest/gtest.h>

namespace statlet {
namespace {

const std::string kId = "3f1c2a4b5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7a8";

TEST(Classifier, SystemdBurstableContainerd) {
  auto pc = ClassifyCgroupPath(
      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice/"
      "cri-containerd-" +
      kId + ".scope");
  EXPECT_EQ(pc.kind, CgroupKind::kContainer);
  EXPECT_EQ(pc.qos, QosClass::kBurstable);
  EXPECT_EQ(pc.runtime, RuntimeKind::kContainerd);
  EXPECT_EQ(pc.driver, CgroupDriver::kSystemd);
  EXPECT_EQ(pc.container_id, kId);
  EXPECT_EQ(pc.pod_uid, "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901");
  EXPECT_EQ(
      pc.pod_path,
      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice");
}

TEST(Classifier, SystemdGuaranteedCrio) {
  auto pc = ClassifyCgroupPath("/kubepods.slice/kubepods-podabc_def.slice/crio-" + kId + ".scope");
  EXPECT_EQ(pc.kind, CgroupKind::kContainer);
  EXPECT_EQ(pc.qos, QosClass::kGuaranteed);
  EXPECT_EQ(pc.runtime, RuntimeKind::kCrio);
  EXPECT_EQ(pc.pod_uid, "abc-def");
}

TEST(Classifier, CrioConmonIsNotAContainer) {
  auto pc = ClassifyCgroupPath("/kubepods.slice/kubepods-podabc.slice/crio-conmon-" + kId + ".scope");
  EXPECT_EQ(pc.kind, CgroupKind::kOther);
  EXPECT_TRUE(pc.container_id.empty());
}

TEST(Classifier, SystemdBestEffortDocker) {
  auto pc = ClassifyCgroupPath("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podx.slice/docker-" +
                               kId + ".scope");
  EXPECT_EQ(pc.kind, CgroupKind::kContainer);
  EXPECT_EQ(pc.qos, QosClass::kBestEffort);
  EXPECT_EQ(pc.runtime, RuntimeKind::kDocker);
}

TEST(Classifier, CgroupfsLayouts) {
  auto c = ClassifyCgroupPath("/kubepods/burstable/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901/" + kId);
  EXPECT_EQ(c.kind, CgroupKind::kContainer);
  EXPECT_EQ(c.driver, CgroupDriver::kCgroupfs);
  EXPECT_EQ(c.qos, QosClass::kBurstable);
  EXPECT_EQ(c.container_id, kId);
  EXPECT_EQ(c.pod_uid, "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901");
  EXPECT_EQ(c.pod_path, "/kubepods/burstable/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901");
  auto g = ClassifyCgroupPath("/kubepods/podu1/" + kId);
  EXPECT_EQ(g.kind, CgroupKind::kContainer);
  EXPECT_EQ(g.qos, QosClass::kGuaranteed);
  auto pod = ClassifyCgroupPath("/kubepods/besteffort/podu2");
  EXPECT_EQ(pod.kind, CgroupKind::kPod);
  EXPECT_EQ(pod.qos, QosClass::kBestEffort);
  EXPECT_EQ(pod.pod_uid, "u2");
}

TEST(Classifier, KubeletUnderACustomCgroupRoot) {
  auto c = ClassifyCgroupPath("/kubelet/kubepods/burstable/podu3/" + kId);
  EXPECT_EQ(c.kind, CgroupKind::kContainer);
  EXPECT_EQ(c.pod_path, "/kubelet/kubepods/burstable/podu3");
}

TEST(Classifier, Hierarchy) {
  EXPECT_EQ(ClassifyCgroupPath("/").kind, CgroupKind::kRoot);
  EXPECT_EQ(ClassifyCgroupPath("/kubepods.slice").kind, CgroupKind::kKubepods);
  EXPECT_EQ(ClassifyCgroupPath("/kubepods").kind, CgroupKind::kKubepods);
  auto q = ClassifyCgroupPath("/kubepods.slice/kubepods-burstable.slice");
  EXPECT_EQ(q.kind, CgroupKind::kQos);
  EXPECT_EQ(q.qos, QosClass::kBurstable);
  EXPECT_EQ(ClassifyCgroupPath("/kubepods/besteffort").kind, CgroupKind::kQos);
  EXPECT_EQ(ClassifyCgroupPath("/system.slice/ssh.service").kind, CgroupKind::kOther);
  EXPECT_EQ(ClassifyCgroupPath("/kubepods/burstable/podu/" + kId + "/nested").kind, CgroupKind::kOther);
}

TEST(Classifier, RuntimeContainersOutsideKubernetes) {
  auto d = ClassifyCgroupPath("/system.slice/docker-" + kId + ".scope");
  EXPECT_EQ(d.kind, CgroupKind::kContainer);
  EXPECT_EQ(d.runtime, RuntimeKind::kDocker);
  auto d2 = ClassifyCgroupPath("/docker/" + kId);
  EXPECT_EQ(d2.kind, CgroupKind::kContainer);
  EXPECT_EQ(d2.runtime, RuntimeKind::kDocker);
  auto ns = ClassifyCgroupPath("/k8s.io/" + kId);
  EXPECT_EQ(ns.kind, CgroupKind::kContainer);
  EXPECT_EQ(ClassifyCgroupPath("/docker/notanid").kind, CgroupKind::kOther);
}

}  // namespace
}  // namespace statlet
