#!/usr/bin/env bash
# Build llama-server from the llama.cpp that llama-cpp-python vendors (the same C++ llamay
# runs on), for scripts/bench_agents.py. Not part of CI: about 15 minutes on 2 cores.
#
#   scripts/build_llama_server.sh [BUILD_DIR]      # prints the binary's path
set -euo pipefail
build=${1:-build/llama-server}
version=$(python -c "import importlib.metadata as m; print(m.version('llama_cpp_python'))")
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
pip download --no-deps --no-binary :all: "llama_cpp_python==$version" -d "$src" >&2
tar -xzf "$src"/llama_cpp_python-"$version".tar.gz -C "$src"
cpp="$src/llama_cpp_python-$version/vendor/llama.cpp"
cmake -S "$cpp" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON >&2
cmake --build "$build" --target llama-server -j "$(nproc)" >&2
echo "$(cd "$build" && pwd)/bin/llama-server"
