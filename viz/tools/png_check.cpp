// png_check.cpp: checks a PNG written by cplab-viz --headless: its size, and that it is not blank.
//
//   png_check FILE.png WIDTH HEIGHT [MIN_COLOURS]
// Passes (exit 0) when the image is WIDTH x HEIGHT, holds at least MIN_COLOURS (default 8) distinct
// colours, and at least 5% of its pixels differ from the most common one (the background).
// What it is not: a golden-image comparison (Mesa versions render text differently).
#include <stb_image.h>

#include <cstdio>
#include <cstdlib>
#include <map>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: png_check FILE.png WIDTH HEIGHT [MIN_COLOURS]\n");
    return 2;
  }
  int w = 0, h = 0, c = 0;
  unsigned char* px = stbi_load(argv[1], &w, &h, &c, 4);
  if (px == nullptr) {
    std::fprintf(stderr, "png_check: %s: cannot read (%s)\n", argv[1], stbi_failure_reason());
    return 1;
  }
  const int W = std::atoi(argv[2]), H = std::atoi(argv[3]), min_colours = argc > 4 ? std::atoi(argv[4]) : 8;
  std::map<unsigned, long> count;
  for (long i = 0; i < static_cast<long>(w) * h; ++i) {
    const unsigned char* p = px + 4 * i;
    ++count[(static_cast<unsigned>(p[0]) << 16) | (static_cast<unsigned>(p[1]) << 8) | p[2]];
  }
  stbi_image_free(px);
  long most = 0;
  for (const auto& [k, n] : count) most = std::max(most, n);
  const double other = 1.0 - static_cast<double>(most) / (static_cast<double>(w) * h);
  std::printf("png_check: %s: %dx%d, %zu colours, %.1f%% non-background\n", argv[1], w, h, count.size(), 100 * other);
  if (w != W || h != H) {
    std::fprintf(stderr, "png_check: expected %dx%d\n", W, H);
    return 1;
  }
  if (static_cast<int>(count.size()) < min_colours || other < 0.05) {
    std::fprintf(stderr, "png_check: the image looks blank\n");
    return 1;
  }
  return 0;
}
