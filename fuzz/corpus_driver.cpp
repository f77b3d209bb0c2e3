// SPDX-License-Identifier: Apache-2.0
// Runs a fuzz target's entry point once on every file of the corpus directories given, with the ordinary compiler:
// the corpus (every reproduction of issue 28 among it) is a test of every build, not only of the clang fuzz build.
// Exit 0 when all ran; a crash or abort fails the test as it would fail the fuzzer.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	namespace fs = std::filesystem;
	std::size_t ran = 0;
	for (int i = 1; i < argc; ++i) {
		std::vector<fs::path> files;
		for (const fs::directory_entry &e : fs::directory_iterator(argv[i]))
			if (e.is_regular_file())
				files.push_back(e.path());
		if (files.empty()) {
			std::fprintf(stderr, "corpus %s: no files\n", argv[i]);
			return 1;
		}
		for (const fs::path &file : files) {
			std::ifstream in(file, std::ios::binary);
			std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
			LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
			++ran;
		}
	}
	std::printf("%zu corpus inputs ran\n", ran);
	return ran > 0 ? 0 : 1;
}
