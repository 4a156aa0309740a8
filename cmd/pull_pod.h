// `statlet pull --pod NAMESPACE/NAME [--container NAME]`: follows a pod's image pulls
// through KEP-5334's ImagePullProgress (docs/image-pulls.md) with the bars of `statlet
// pull`.
#pragma once

#include <chrono>
#include <string>

namespace statlet {

struct PullPodOptions {
  std::string cri_endpoint;      // statlet's CRI socket: ImagePullProgress, and the pod lists in proxy mode
  std::string runtime_endpoint;  // where the pod lists come from otherwise; empty: auto-detect
  std::string pod;               // NAMESPACE/NAME
  std::string container;         // empty: the whole pod
  std::string ca_file;           // for an https URL; empty: the system's CAs
  std::string basic_auth;        // USER:PASSWORD for the web listener; empty: none
  bool plain = false;
  bool until_done = false;  // exit once every layer seen is complete and stayed so for `settle`
  // With until_done: how long every pull seen must stay complete with no new one before
  // the pod counts as done (the kubelet pulls a pod's images one after another).
  std::chrono::milliseconds settle{10000};
};

// The exit status: 0 (ended, or done with --until-done), 1 failed, 2 usage.
int FollowPodPulls(const PullPodOptions& options);

}  // namespace statlet
