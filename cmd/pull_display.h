// What `statlet pull` shows for each progress report. On a terminal: one row per layer
// like `ctr pull` (digest, stage, a 40-column bar, bytes, rate, ETA) and a total row,
// redrawn in place; otherwise one plain line per report and one per layer that finishes.
// Rates and ETAs are the client's own, from the offsets of successive reports.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace statlet {

struct PullReportLayer {
  std::string digest;  // "sha256:<hex>"
  uint64_t offset = 0;
  uint64_t total = 0;
  std::string stage;  // waiting, downloading, done, exists
};

struct PullReport {
  uint64_t offset = 0;
  std::optional<uint64_t> total;
  std::vector<PullReportLayer> layers;
};

class PullDisplay {
 public:
  PullDisplay(std::string image, bool terminal) : image_(std::move(image)), terminal_(terminal) {}
  // The text to write for a report received `elapsed` seconds after the start.
  std::string Update(const PullReport& report, double elapsed);
  // The terminal rows of a report without the cursor moves: for a caller that draws several
  // images at once (`statlet pull --pod`) and redraws them together. *rows: how many.
  std::string Block(const PullReport& report, double elapsed, int* rows);
  // The last words: "done: <ref> (3.4s)" or nothing (errors go to stderr).
  std::string Done(const std::string& image_ref, double elapsed);

 private:
  struct Rate {
    bool seen = false;
    double at = 0;
    uint64_t offset = 0;
    double bytes_per_second = 0;
  };
  double Measure(Rate* r, uint64_t offset, double now);
  // The terminal rows (no cursor moves) with the total's rate already measured.
  std::string Rows(const PullReport& report, double elapsed, double rate, int* rows);
  std::string Row(const std::string& name, const std::string& stage, uint64_t offset, std::optional<uint64_t> total,
                  double rate) const;

  std::string image_;
  bool terminal_;
  int drawn_rows_ = 0;  // rows to move up before redrawing
  Rate total_rate_;
  std::map<std::string, Rate> layer_rates_;
  std::map<std::string, std::string> stages_;  // last stage printed per layer (plain output)
};

// "1.0 MiB", "64.0 MiB" (binary units, as ctr shows them; the server's stall messages use
// the same rendering).
std::string PullBytes(uint64_t bytes);
// The 40-column bar: "|++++----|" (+ for done).
std::string PullBar(uint64_t offset, uint64_t total, int width = 40);
// "sha256:cffcf9756171" (12 hex digits, enough to tell layers apart on screen).
std::string ShortDigest(const std::string& digest);

}  // namespace statlet
