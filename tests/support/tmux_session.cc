#include "tests/support/tmux_session.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace statlet::testing {

TmuxSession::TmuxSession(std::string socket_name, std::string session)
    : socket_(std::move(socket_name)), session_(std::move(session)) {}

TmuxSession::~TmuxSession() {
  Command("kill-server");
  if (!socket_path_.empty()) unlink(socket_path_.c_str());
}

bool TmuxSession::Start(const std::string& shell_command, int width, int height, bool remain_on_exit) {
  std::string cmd = "tmux -L " + socket_ + " -f /dev/null new-session -d -s " + session_ + " -x " +
                    std::to_string(width) + " -y " + std::to_string(height) + " '" + shell_command + "'";
  if (remain_on_exit) cmd += " \\; set-option -w -t " + session_ + " remain-on-exit on";
  const bool started = std::system(cmd.c_str()) == 0;
  socket_path_ = Format("socket_path");
  return started;
}

std::string TmuxSession::Capture() { return Command("capture-pane -p -t " + session_); }

void TmuxSession::SendKeys(const std::string& keys) { Command("send-keys -t " + session_ + " " + keys); }

std::string TmuxSession::Format(const std::string& variable) {
  std::string out = Command("display-message -p -t " + session_ + " '#{" + variable + "}'");
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string TmuxSession::Command(const std::string& args) {
  std::string out;
  FILE* p = popen(("tmux -L " + socket_ + " " + args + " 2>/dev/null").c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

}  // namespace statlet::testing
