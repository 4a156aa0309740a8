// "did you mean": the known name nearest to a mistyped one, for the unknown-flag and
// unknown-config-key errors of every command.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace statlet {

// The candidate closest to `name` by edit distance (insertions, deletions, substitutions and
// swaps of neighbours), ignoring '-', '.' and '_' differences first ("maxage" is
// "max-age"); "" when none is close enough to be the one meant (more than a third of the
// name's characters, at least 1 and at most 3, would have to change).
std::string NearestName(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace statlet
