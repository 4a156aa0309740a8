// A tmux server of a test's own (its own socket name, no user config) running one session
// in a pseudo-terminal: what the terminal tests (statlet top, statlet pull) drive their
// programs through and read the screen from.
#pragma once

#include <string>

namespace statlet::testing {

class TmuxSession {
 public:
  // `socket_name` must be unique on the host (e.g. UniqueName("statlet-top")).
  TmuxSession(std::string socket_name, std::string session);
  ~TmuxSession();  // kills the server and removes the socket file it leaves
  TmuxSession(const TmuxSession&) = delete;
  TmuxSession& operator=(const TmuxSession&) = delete;

  // Runs `shell_command` in a width×height pane; with remain_on_exit the pane stays after
  // the command exits, so its final state can still be read.
  bool Start(const std::string& shell_command, int width, int height, bool remain_on_exit = false);
  std::string Capture();
  void SendKeys(const std::string& keys);
  // A format variable of the pane: pane_dead, alternate_on, cursor_flag, pane_pid…
  std::string Format(const std::string& variable);

 private:
  std::string Command(const std::string& args);
  std::string socket_;
  std::string session_;
  std::string socket_path_;
};

}  // namespace statlet::testing
