# The two commands: `make notebooks` starts Jupyter on notebooks/ with the GoNB kernel, `make test`
# runs the whole test suite. Both install what is missing first (.ci/setup.sh). The mode is chosen
# automatically: with an NVIDIA GPU the default build; without one the nocuda build (no-GPU mode).

SHELL := /bin/bash
MODE := $(shell bash .ci/mode.sh)
PORT ?= 8888
IP ?= 127.0.0.1
OUT ?= out
ARGS ?=
TAGS := $(if $(filter nogpu,$(MODE)),-tags=nocuda,)

.PHONY: setup notebooks test reproduce kernelbench grade hub

setup:
	@bash .ci/setup.sh

notebooks: setup
	@echo "Starting Jupyter in $(MODE) mode on http://$(IP):$(PORT)"
	@bash .ci/jupyter.sh --ip=$(IP) --port=$(PORT)

test: setup
	@bash .ci/test.sh

# The headless reproduce command: every lesson on the GPU, tables printed, receipts, figures and a
# report written to $(OUT). For example: make reproduce ARGS="-lessons 01 -quick".
reproduce: setup
	@source .ci/env.sh && go run ./cmd/reproduce -out $(OUT) $(ARGS)

# KernelBench's problems that the lessons cover, as KernelBench runs them (cmd/kernelbench): the
# lessons' kernels beside the reference PyTorch model, eager and torch.compile, both correctness
# verdicts and fast_p; tables printed, the receipt in $(OUT)/kernelbench.json. For example:
# make kernelbench ARGS="-problems 1,23,L2-1" or ARGS="-small -trials 2".
kernelbench: setup
	@source .ci/env.sh && go run ./cmd/kernelbench -out $(OUT)/kernelbench.json $(ARGS)

# Every notebook (or NB="03_matmul.ipynb ...") executed top to bottom on this machine into $(OUT),
# each checked (.ci/execute.sh): on a GPU each measures its own lesson, four at a time, their cells
# taking turns at the GPU, and the runs they measured are left in $(OUT)/runs; copy the notebooks
# over notebooks/ to commit their outputs. For example: make execute OUT=run NB=08_hopper.ipynb
.PHONY: execute
execute: setup
	@bash .ci/execute.sh $(OUT) $(NB)

# Everything the suite records, in one run at one commit on this machine's GPUs (.ci/record.sh):
# every notebook executed (each measuring its lesson), KernelBench's catalog in three parts, the
# sanitizer pass, lesson 08's SASS records and the GPU profile matrix, spread over the GPUs, two
# tasks at a time on each, taking turns at it; or the tasks named, e.g.
# make record OUT=rec ARGS="nb:03_matmul.ipynb kb:2/3 gpus:t4:08_hopper.ipynb".
# A stopped run resumes when given the same OUT. Then make adopt OUT=rec (no GPU needed) puts the
# notebooks, results/, docs/GPUS.md and the README's generated parts in place.
.PHONY: record adopt
record: setup
	@bash .ci/record.sh $(OUT) $(ARGS)

adopt: setup
	@bash .ci/adopt.sh $(OUT)

# Every notebook under every GPU profile (KERNELS_EMULATE), recorded in results/gpus.json and
# docs/GPUS.md (cmd/gpus). For example: make gpus ARGS="-profiles t4,l4 -notebooks 03_matmul.ipynb".
.PHONY: gpus
gpus: setup
	@source .ci/env.sh && go run $(TAGS) ./cmd/gpus $(ARGS)

# The sanitizer pass: each package's TestSanitize (every kernel once, on small awkward shapes)
# under compute-sanitizer memcheck, racecheck and synccheck, several at once (cmd/sanitize; needs a
# GPU and the CUDA toolkit). It writes $(OUT)/sanitize.json; ARGS="-out results" records the pass
# that make test checks covers every kernel. For example: make sanitize ARGS="-tools racecheck ./lessons/reduce"
.PHONY: sanitize
sanitize: setup
	@source .ci/env.sh && go run ./cmd/sanitize -out $(OUT) $(ARGS)

# Nsight Compute profiles of each lesson's chosen steps (cmd/profile): each step run once by its Try
# cell in a child process under ncu; one JSON file per lesson in $(OUT)/profiles, which the notebooks
# show from results/profiles (ARGS="-out results/profiles" records them there). Needs a GPU, the CUDA
# toolkit's ncu and the GPU's performance counters (root, or docs/INSTRUCTORS.md). For example:
# make profile ARGS="-lessons 00_setup,03_matmul"
.PHONY: profile
profile: setup
	@source .ci/env.sh && go run ./cmd/profile -out $(OUT)/profiles $(ARGS)

# Hostile inputs: every public op of every lesson on the inputs models produce (extreme scales,
# masks, inf and NaN, denormals, long rows, misaligned views), against the float64 reference and
# PyTorch (cmd/hostile; needs a GPU). It writes $(OUT)/hostile.json; ARGS="-out results" records the
# run that make test checks. For example: make hostile ARGS="-short -ops softmax"
.PHONY: hostile
hostile: setup
	@source .ci/env.sh && go run ./cmd/hostile -out $(OUT) $(ARGS)

# The classroom: JupyterHub serving the suite to the students of a roster (a plain file of user names,
# each optionally with a GPU), each logging in with their own account to their own server, copy of
# the notebooks and GPU (.ci/hub.sh; docs/INSTRUCTORS.md). Run as root, on port 8000 unless PORT is
# given: sudo make hub ROSTER=students.txt IP=0.0.0.0
hub: setup
	@ROSTER="$(ROSTER)" IP="$(IP)" PORT="$(if $(filter command line environment,$(origin PORT)),$(PORT),8000)" bash .ci/hub.sh

# Grade students' notebooks: make grade NB="class/ bob.ipynb" (files or folders of them), or a hub's
# class from each student's ~/cudalessons: sudo make grade ROSTER=students.txt (the roster make hub
# reads; STUDENTS= works too), which also writes the gradebook, gradebook/gradebook.csv and
# gradebook.md (GRADEBOOK=dir picks the folder; with NB alone it writes one only when GRADEBOOK is
# given). It runs only the exercises' kernels and checks, never the cells' Go; exit status 1 when an
# exercise failed, could not be graded or a student has no notebooks (cmd/grade; make then reports
# its own status 2). Without a GPU it compiles and says what needs a GPU. ARGS="-json grades.json"
# also writes the rows as JSON.
CLASS = $(or $(STUDENTS),$(ROSTER))
grade: setup
	@test -n "$(NB)$(CLASS)" || { echo 'make grade NB="notebook.ipynb or folder ..." or make grade ROSTER=students.txt'; exit 2; }
	@source .ci/env.sh && go build $(TAGS) -o .scratch/grade ./cmd/grade && .scratch/grade $(if $(CLASS),-students "$(CLASS)") $(if $(GRADEBOOK),-gradebook "$(GRADEBOOK)") $(ARGS) $(NB)
