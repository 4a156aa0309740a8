#include "cmd/top_render.h"

#include "base/human_bytes.h"

#include <algorithm>
#include <cstdio>

namespace statlet::top {
namespace {

constexpr int kMinNameWidth = 16;

struct ColumnSpec {
  const char* label;
  int width;  // value cells are right-aligned in this many columns
};
// Indexed by Column.
// Each label says what its column holds (the help spells them out): CPU % of one CPU split
// into user and kernel time, the working set (what the kubelet evicts by), the memory limit,
// the share of CFS periods throttled, bytes per second and PSI "some" avg10.
constexpr ColumnSpec kSpecs[kColumnCount] = {
    {"NAME", 0},        {"CPU%", 7}, {"USR%", 6}, {"SYS%", 6},    {"WORKING SET", 12}, {"MEM LIMIT", 10},
    {"THROTTLED%", 11}, {"RX/s", 9}, {"TX/s", 9}, {"CPU-PSI", 8}, {"MEM-PSI", 8},
};
// Dropped first to last when the screen is narrow.
constexpr Column kDropOrder[] = {Column::kMemoryPsi, Column::kCpuPsi, Column::kTx,   Column::kRx,
                                 Column::kLimit,     Column::kSystem, Column::kUser, Column::kThrottled};

// Display columns of UTF-8 text (one per code point; names are ASCII in practice).
size_t Width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The first `width` display columns of `s`, never splitting a code point.
std::string Head(const std::string& s, size_t width) {
  size_t cols = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (cols == width) break;
      ++cols;
    }
  }
  return s.substr(0, i);
}

// The last `width` display columns of `s`.
std::string Tail(const std::string& s, size_t width) {
  size_t cols = 0, i = s.size();
  while (i > 0 && cols < width) {
    --i;
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) ++cols;
  }
  return s.substr(i);
}

std::string PadRight(const std::string& s, size_t width) {
  size_t w = Width(s);
  return w >= width ? Head(s, width) : s + std::string(width - w, ' ');
}

std::string PadLeft(const std::string& s, size_t width) {
  size_t w = Width(s);
  return w >= width ? s : std::string(width - w, ' ') + s;
}

std::string Fixed(const std::optional<double>& v, const char* format) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, format, *v);
  return buf;
}

std::string Bytes(const std::optional<uint64_t>& v) {
  return v ? HumanBytes(static_cast<double>(*v)) : std::string("-");
}

std::string Rate(const std::optional<double>& v) { return v ? HumanBytes(*v) : std::string("-"); }

std::string Cell(const Row& r, Column c) {
  switch (c) {
    case Column::kName: return r.name;
    case Column::kCpu: return Fixed(r.cpu_percent, "%.1f");
    case Column::kUser: return Fixed(r.user_percent, "%.1f");
    case Column::kSystem: return Fixed(r.system_percent, "%.1f");
    case Column::kMemory: {
      // The Memory QoS zone as a mark; the title says which rules judged it.
      const char mark = MemoryZoneMark(r.memory_zone);
      return r.working_set_bytes ? Bytes(r.working_set_bytes) + mark : std::string("-");
    }
    case Column::kLimit: return Bytes(r.memory_limit_bytes);
    case Column::kThrottled: return Fixed(r.throttled_percent, "%.1f");
    case Column::kRx: return Rate(r.rx_bytes_per_second);
    case Column::kTx: return Rate(r.tx_bytes_per_second);
    case Column::kCpuPsi: return Fixed(r.cpu_psi_some_avg10, "%.2f");
    case Column::kMemoryPsi: return Fixed(r.memory_psi_some_avg10, "%.2f");
  }
  return "-";
}

int FixedWidth(const std::vector<Column>& cols) {
  int w = 0;
  for (Column c : cols) {
    if (c != Column::kName) w += 1 + kSpecs[static_cast<int>(c)].width;
  }
  return w;
}

// One table line: NAME padded to `name_width`, then each value right-aligned.
std::string TableLine(const std::vector<std::string>& cells, const std::vector<Column>& cols, size_t name_width) {
  std::string line;
  for (size_t i = 0; i < cols.size(); ++i) {
    if (cols[i] == Column::kName) {
      line += PadRight(cells[i], name_width);
    } else {
      line += ' ';
      line += PadLeft(cells[i], static_cast<size_t>(kSpecs[static_cast<int>(cols[i])].width));
    }
  }
  return line;
}

}  // namespace

std::vector<Column> VisibleColumns(int width) {
  std::vector<Column> cols;
  for (int i = 0; i < kColumnCount; ++i) cols.push_back(static_cast<Column>(i));
  for (Column drop : kDropOrder) {
    if (width - FixedWidth(cols) >= kMinNameWidth) break;
    cols.erase(std::find(cols.begin(), cols.end(), drop));
  }
  return cols;
}

Screen Render(const std::vector<Row>& rows, const Frame& frame, int width, int height) {
  Screen screen;
  if (width <= 0 || height <= 0) return screen;
  const size_t w = static_cast<size_t>(width);
  auto add = [&](const std::string& line) {
    if (screen.lines.size() < static_cast<size_t>(height)) screen.lines.push_back(Head(line, w));
  };

  std::string title = "statlet top  " + frame.clock + "  " + frame.source + "  every " + frame.interval +
                      "  sort: " + ColumnName(frame.view.sort) + (frame.view.reverse ? " (reversed)" : "") +
                      (frame.view.show == Show::kAll ? "" : std::string("  show: ") + ShowName(frame.view.show)) +
                      "  " + std::to_string(rows.size()) + (rows.size() == 1 ? " row" : " rows");
  if (!frame.memory_qos.empty()) title += "  MEM < protected ^ throttling ! at limit (" + frame.memory_qos + ")";
  add(title);
  std::string status;
  if (!frame.prompt.empty()) {
    status = frame.prompt + "_";
  } else {
    if (!frame.view.filter.empty()) status = "filter: " + frame.view.filter + "  ";
    if (!frame.message.empty()) status += frame.message + "  ";
    if (frame.interactive) status += "keys: c m n t < > r sort  / filter  k pods/host  + - d interval  q quit";
  }
  while (!status.empty() && status.back() == ' ') status.pop_back();
  if (!status.empty() || frame.interactive) add(status);

  const std::vector<Column> cols = VisibleColumns(width);
  const int name_width = std::max(width - FixedWidth(cols), 1);
  std::vector<std::string> header;
  for (Column c : cols) {
    std::string label = kSpecs[static_cast<int>(c)].label;
    header.push_back(c == frame.view.sort ? (c == Column::kName ? label + "*" : "*" + label) : label);
  }
  screen.header_line = static_cast<int>(screen.lines.size());
  add(TableLine(header, cols, static_cast<size_t>(name_width)));
  if (screen.lines.size() < static_cast<size_t>(screen.header_line + 1)) screen.header_line = -1;

  const size_t h = static_cast<size_t>(height);
  const size_t room = h > screen.lines.size() ? h - screen.lines.size() : 0;
  const bool overflow = rows.size() > room;
  const size_t shown = overflow ? (room > 0 ? room - 1 : 0) : rows.size();
  for (size_t i = 0; i < shown; ++i) {
    const Row& r = rows[i];
    std::vector<std::string> cells;
    for (Column c : cols) cells.push_back(Cell(r, c));
    // NAME: indented under its parent; a long name keeps its end, the telling part of a path.
    std::string indent(static_cast<size_t>(std::min(r.depth, 8)) * 2, ' ');
    std::string name = r.kind == EntryKind::kSection ? "== " + r.name + " ==" : r.name;
    const size_t room_for_name =
        static_cast<size_t>(name_width) > indent.size() + 1 ? static_cast<size_t>(name_width) - indent.size() - 1 : 1;
    if (Width(name) > room_for_name) name = ".." + Tail(name, room_for_name > 2 ? room_for_name - 2 : 0);
    cells[0] = indent + name;
    add(TableLine(cells, cols, static_cast<size_t>(name_width)));
  }
  if (overflow && room > 0) add("... " + std::to_string(rows.size() - shown) + " more (filter with /)");
  return screen;
}

}  // namespace statlet::top
