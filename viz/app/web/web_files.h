// web_files.h: files given to cplab-viz in the browser: dropped on the page, or chosen with the
// controls pane's "Open files" button (both land in the page's memory file system first).
//
// What it is: open_files, which opens by kind
//   a trace        `cplab run --trace` or `cplab-bench cp --trace` (JSON, format cplab-trace): the
//                  timeline of its measured times, as `cplab-viz --view timeline --trace FILE`
//   a check report `cplab check --json`: the check view's heat map, as `--view check --check-report`
//   a schedule     `cplab schedule --json`: the scheduler view, as `--view scheduler --schedule-json`
//   .npy tensors   inputs q, k, v [do] [sinks] and outputs o [lse dq dk dv dsinks] in global token
//                  order, named so: once q, k, v and o are there the page runs `cplab check` itself
//                  (app/embedded.h check_embedded: the command's options, rules and report) with the
//                  run of the controls pane (mode, cp, layout, masks; the sizes are the files'),
//                  and shows its heat map with the text report beside it. Work a browser tab should
//                  not take on (its single thread) is refused with the limit named (kMaxPageCheckFlops)
// Every file is checked by the loader the command line uses, so a bad file gets its message; a
// file that fails leaves the picture as it was. web_controls draws the pane's part: the button, what
// the page holds for a check, and the last error.
// What it is not: reading files itself (the reference's loaders do), or the browser's JavaScript
// (shell.html writes the files and calls cplab_open_files).
#pragma once

#include <string>
#include <vector>

#include "app.h"

namespace cplab::viz {

// the attention work (CP run + dense oracle, run/experiment.h cpu_flops_estimate) a check in the page
// may take: one browser thread; near the limit (896 tokens, 8 heads over 2, dim 64: 1.8 GFLOP) the
// check took 5.6 s in headless Chromium on the 2-core development machine. The command line's limit
// is 4 TFLOP on all cores
inline constexpr double kMaxPageCheckFlops = 2e9;

// opens the files (paths in the page's file system); returns "" or the one-line error
// ("cplab-viz: error: ...")
std::string open_files(AppState& app, const std::vector<std::string>& paths);

// forgets the tensors held for a check (the pane's "clear")
void clear_check_files();

// the controls pane's part (AppState::platform_controls)
void web_controls(AppState& app);

}  // namespace cplab::viz
