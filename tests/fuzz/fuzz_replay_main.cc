// fuzz_replay_main.cc - a stand-in for libFuzzer's main() in builds without libFuzzer (gcc).
//
//   fuzz_xxx [-mutations=N] [-seed=S] PATH...
//
// Runs LLVMFuzzerTestOneInput on every file in each PATH (a file or a folder of files; nothing
// is written), then on N deterministic mutations of each (bit flips, byte changes, insertions,
// deletions, truncations, splices with another input; default 500, the meson test asks for
// 2000). A broken invariant aborts inside the target, so the exit status tells pass from fail;
// the name and the bytes of the failing input are written to stderr first, so that a failing
// mutation can be added to the corpus.
#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_common.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DLB_REPLAY_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(DLB_REPLAY_SANITIZER)
#define DLB_REPLAY_SANITIZER 1
#endif
#ifdef DLB_REPLAY_SANITIZER
#include <sanitizer/common_interface_defs.h>
#endif

namespace {

using Bytes = std::vector<uint8_t>;

bool read_file(const std::filesystem::path& path, Bytes* out) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  out->assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  return true;
}

// xorshift64*: deterministic, so a failure reproduces with the same arguments.
struct Rng {
  uint64_t state;
  uint64_t next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1DULL;
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }
};

const Bytes* g_current = nullptr;  // the input being run, printed if it aborts
std::string g_current_name;

void print_current() {
  if (g_current != nullptr) {
    std::fprintf(stderr, "failing input: %s\n", g_current_name.c_str());
    std::fprintf(stderr, "failing input (%zu bytes):", g_current->size());
    for (uint8_t b : *g_current) std::fprintf(stderr, " %02x", b);
    std::fprintf(stderr, "\n");
  }
}

// FUZZ_CHECK aborts; a sanitizer report ends the process through its death callback.
void on_abort(int) {
  print_current();
  std::signal(SIGABRT, SIG_DFL);
  std::abort();
}

void run(const Bytes& input, std::string name) {
  g_current = &input;
  g_current_name = std::move(name);
  // An empty vector's data() may be NULL; libFuzzer always passes a valid pointer.
  static const uint8_t kEmpty = 0;
  LLVMFuzzerTestOneInput(input.empty() ? &kEmpty : input.data(), input.size());
  g_current = nullptr;
}

Bytes mutate(const Bytes& base, const std::vector<Bytes>& all, Rng& rng) {
  Bytes m = base;
  const int edits = 1 + static_cast<int>(rng.below(4));
  for (int e = 0; e < edits; e++) {
    switch (rng.below(7)) {
      case 0:  // flip a bit
        if (!m.empty()) m[rng.below(m.size())] ^= static_cast<uint8_t>(1u << rng.below(8));
        break;
      case 1:  // set a byte to a random or an interesting value
        if (!m.empty()) {
          static const uint8_t kInteresting[] = {0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF, 0xF0, 0xE0};
          m[rng.below(m.size())] = rng.below(2) != 0 ? static_cast<uint8_t>(rng.next())
                                                     : kInteresting[rng.below(sizeof kInteresting)];
        }
        break;
      case 2:  // insert a byte
        m.insert(m.begin() + static_cast<std::ptrdiff_t>(rng.below(m.size() + 1)),
                 static_cast<uint8_t>(rng.next()));
        break;
      case 3:  // delete a byte
        if (!m.empty()) m.erase(m.begin() + static_cast<std::ptrdiff_t>(rng.below(m.size())));
        break;
      case 4:  // truncate
        m.resize(rng.below(m.size() + 1));
        break;
      case 5: {  // splice the tail of another input
        const Bytes& other = all[rng.below(all.size())];
        const size_t cut = rng.below(m.size() + 1);
        const size_t from = rng.below(other.size() + 1);
        m.resize(cut);
        m.insert(m.end(), other.begin() + static_cast<std::ptrdiff_t>(from), other.end());
        break;
      }
      default:  // an arithmetic nudge
        if (!m.empty()) {
          const size_t at = rng.below(m.size());
          m[at] = static_cast<uint8_t>(m[at] + static_cast<uint8_t>(rng.below(9)) - 4);
        }
        break;
    }
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  long mutations = 500;
  uint64_t seed = 0x9E3779B97F4A7C15ULL;
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; i++) {
    const std::string arg = argv[i];
    if (arg.rfind("-mutations=", 0) == 0) {
      mutations = std::strtol(arg.c_str() + 11, nullptr, 10);
    } else if (arg.rfind("-seed=", 0) == 0) {
      seed = std::strtoull(arg.c_str() + 6, nullptr, 10) | 1;
    } else if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else if (std::filesystem::is_regular_file(arg)) {
      files.emplace_back(arg);
    } else {
      std::fprintf(stderr, "%s: no such file or folder: %s\n", argv[0], arg.c_str());
      return 2;
    }
  }
  std::sort(files.begin(), files.end());  // directory order is not stable
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s [-mutations=N] [-seed=S] FILE_OR_FOLDER...\n", argv[0]);
    return 2;
  }

  std::signal(SIGABRT, on_abort);
#ifdef DLB_REPLAY_SANITIZER
  __sanitizer_set_death_callback(print_current);
#endif

  std::vector<Bytes> inputs;
  std::vector<std::string> names;
  inputs.emplace_back();  // the empty input
  names.emplace_back("(the empty input)");
  for (const auto& path : files) {
    Bytes b;
    if (!read_file(path, &b)) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], path.string().c_str());
      return 2;
    }
    inputs.push_back(std::move(b));
    names.push_back(path.string());
  }
  for (size_t i = 0; i < inputs.size(); i++) run(inputs[i], names[i]);
  std::printf("replayed %zu corpus inputs (and the empty input)\n", inputs.size() - 1);

  Rng rng{seed};
  long runs = 0;
  for (size_t i = 0; i < inputs.size(); i++) {
    for (long k = 0; k < mutations; k++) {
      run(mutate(inputs[i], inputs, rng), "mutation " + std::to_string(k) + " of " + names[i] +
                                              " (seed " + std::to_string(seed) + ")");
      runs++;
    }
  }
  std::printf("ran %ld mutated inputs (seed %llu)\n", runs, static_cast<unsigned long long>(seed));
  return 0;
}
