#!/usr/bin/env bash
# mode.sh: prints "gpu" when an NVIDIA GPU answers, else "nogpu". The Makefile builds with the
# nocuda tag in nogpu mode: gorgonia.org/cu ends any process that links it on a machine without a GPU.
if [ -n "${KERNELS_MODE:-}" ]; then echo "$KERNELS_MODE"; exit 0; fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo gpu
else
  echo nogpu
fi
