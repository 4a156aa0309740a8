// The service manager's readiness protocol (systemd's Type=notify, sd_notify(3)): one
// datagram such as "READY=1" to the unix socket named by $NOTIFY_SOCKET. Nothing happens
// when the variable is unset (not started by a service manager, or another Type=).
#pragma once

namespace statlet {

// Sends `state` (e.g. "READY=1", "STOPPING=1"); false when there is no manager to tell or
// the datagram could not be sent.
bool NotifyServiceManager(const char* state);

}  // namespace statlet
