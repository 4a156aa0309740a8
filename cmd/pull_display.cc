#include "cmd/pull_display.h"

#include "base/human_bytes.h"

#include <cmath>
#include <cstdio>

#include "pulls/pull_view.h"

namespace statlet {
namespace {

std::string Eta(double seconds) {
  if (!(seconds >= 0) || seconds > 99 * 3600) return "";
  char b[32];
  long s = std::lround(std::ceil(seconds));
  if (s >= 3600) {
    std::snprintf(b, sizeof b, "ETA %ldh%02ldm", s / 3600, (s % 3600) / 60);
  } else if (s >= 60) {
    std::snprintf(b, sizeof b, "ETA %ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(b, sizeof b, "ETA %lds", s);
  }
  return b;
}

}  // namespace

std::string PullBytes(uint64_t bytes) { return HumanBytes(static_cast<double>(bytes), " "); }

std::string PullBar(uint64_t offset, uint64_t total, int width) {
  int filled = total == 0 ? 0 : static_cast<int>(static_cast<double>(std::min(offset, total)) * width / total);
  return "|" + std::string(static_cast<size_t>(filled), '+') + std::string(static_cast<size_t>(width - filled), '-') +
         "|";
}

std::string ShortDigest(const std::string& digest) {
  size_t colon = digest.find(':');
  return colon == std::string::npos ? digest.substr(0, 12) : digest.substr(0, std::min(digest.size(), colon + 13));
}

double PullDisplay::Measure(Rate* r, uint64_t offset, double now) {
  // A rate over the interval since the previous report, smoothed a little.
  if (r->seen && now > r->at && offset >= r->offset) {
    double inst = static_cast<double>(offset - r->offset) / (now - r->at);
    r->bytes_per_second = r->bytes_per_second == 0 ? inst : 0.5 * r->bytes_per_second + 0.5 * inst;
  }
  r->seen = true;
  r->at = now;
  r->offset = offset;
  return r->bytes_per_second;
}

std::string PullDisplay::Row(const std::string& name, const std::string& stage, uint64_t offset,
                             std::optional<uint64_t> total, double rate) const {
  char b[256];
  std::string bytes = total ? PullBytes(offset) + "/" + PullBytes(*total) : PullBytes(offset);
  std::string bar = total ? PullBar(offset, *total) : PullBar(0, 1);
  std::string speed, eta;
  if (stage == "downloading" || stage == "pulling") {
    if (rate > 0) speed = PullBytes(static_cast<uint64_t>(rate)) + "/s";
    if (rate > 0 && total && *total >= offset) eta = Eta(static_cast<double>(*total - offset) / rate);
  }
  std::snprintf(b, sizeof b, "%-20s %-12s %s %23s %12s %s", (name + ":").c_str(), stage.c_str(), bar.c_str(),
                bytes.c_str(), speed.c_str(), eta.c_str());
  std::string row = b;
  while (!row.empty() && row.back() == ' ') row.pop_back();
  return row;
}

std::string PullDisplay::Update(const PullReport& report, double elapsed) {
  const double rate = Measure(&total_rate_, report.offset, elapsed);
  std::string out;
  if (!terminal_) {
    char b[64];
    std::snprintf(b, sizeof b, "%.1fs ", elapsed);
    out = b + image_ + " " + (report.total ? PullBytes(report.offset) + "/" + PullBytes(*report.total) : "resolving");
    if (report.total && *report.total > 0) {
      std::snprintf(b, sizeof b, " %.0f%%", 100.0 * static_cast<double>(report.offset) / *report.total);
      out += b;
    }
    if (rate > 0) out += " " + PullBytes(static_cast<uint64_t>(rate)) + "/s";
    if (rate > 0 && report.total && *report.total >= report.offset) {
      std::string e = Eta(static_cast<double>(*report.total - report.offset) / rate);
      if (!e.empty()) out += " " + e;
    }
    out += "\n";
    for (const auto& l : report.layers) {
      std::string& last = stages_[l.digest];
      if (l.stage == last) continue;
      last = l.stage;
      if (l.stage == "done" || l.stage == "exists") {
        std::snprintf(b, sizeof b, "%.1fs ", elapsed);
        out += b + std::string("layer ") + l.digest + " " + l.stage + " " + PullBytes(l.total) + "\n";
      }
    }
    return out;
  }
  // Back to the first row of the previous drawing, then every row cleared and redrawn.
  if (drawn_rows_ > 0) out += "\033[" + std::to_string(drawn_rows_) + "A\r";
  out += Rows(report, elapsed, rate, &drawn_rows_);
  return out;
}

std::string PullDisplay::Block(const PullReport& report, double elapsed, int* rows) {
  const double rate = Measure(&total_rate_, report.offset, elapsed);
  return Rows(report, elapsed, rate, rows);
}

std::string PullDisplay::Rows(const PullReport& report, double elapsed, double rate, int* rows) {
  std::string out;
  *rows = 0;
  auto line = [&](const std::string& s) {
    out += "\033[2K" + s + "\n";
    ++*rows;
  };
  char head[64];
  std::snprintf(head, sizeof head, "  elapsed %.1fs", elapsed);
  line(image_ + ":" + head);
  for (const auto& l : report.layers) {
    double lr = Measure(&layer_rates_[l.digest], l.offset, elapsed);
    line(Row(ShortDigest(l.digest), l.stage, l.offset, l.total, lr));
  }
  line(Row("total", report.total ? (report.offset >= *report.total ? "unpacking" : "pulling") : "resolving",
           report.offset, report.total, rate));
  return out;
}

std::string PullDisplay::Done(const std::string& image_ref, double elapsed) {
  char b[64];
  std::snprintf(b, sizeof b, " (%.1fs)\n", elapsed);
  return "done: " + image_ref + b;
}

}  // namespace statlet
