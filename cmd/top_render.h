// statlet top's renderer: arranged rows (cmd/top_model.h) to the plain text lines of one
// screen of a given size. No escape sequences: the terminal loop adds them.
#pragma once

#include <string>
#include <vector>

#include "cmd/top_model.h"

namespace statlet::top {

// What the two lines above the table say.
struct Frame {
  std::string source;    // where the numbers come from: "in-process", "daemon /run/…"
  std::string clock;     // when the last sample was taken, "15:04:05"
  std::string interval;  // the refresh interval, "1s"
  View view;
  std::string prompt;       // the line being typed ("filter: ab"); shown instead of the help
  std::string message;      // a note or the last error; "" for none
  bool interactive = true;  // a terminal: the keys are listed (piped frames leave them out)
  std::string memory_qos;   // which Memory QoS rules the MEM marks were judged by (Sample::memory_qos)
};

struct Screen {
  std::vector<std::string> lines;  // at most `height`, none wider than `width` columns
  int header_line = -1;            // the table's column header (drawn highlighted)
};

// The columns that fit `width`: NAME keeps at least 16 columns, and the least telling
// columns go first (PSI, network, limit, user/kernel split, throttling). Always NAME, CPU %
// and memory.
std::vector<Column> VisibleColumns(int width);

// Two lines of status (title, then the keys, the prompt or the filter; piped, the second
// only when there is a filter or message), the column header with the sort column marked by
// '*', then one line per row until `height` is used up; the last line says how many rows
// did not fit. A section row is drawn as a heading: "== NAME ==" with its totals.
Screen Render(const std::vector<Row>& rows, const Frame& frame, int width, int height);

}  // namespace statlet::top
