# Thin wrapper over CMake. `make` builds, `make test` builds and runs the
# unit tests, `make asan` does the same under AddressSanitizer + UBSan.
BUILD ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# CI builds with warnings as errors; users' newer compilers should not break the build.
ifeq ($(CI),true)
CMAKE_FLAGS += -DPOSEMB_WERROR=ON
endif

.PHONY: all test install asan fuzz format format-check clean deps demo study claims position-learning long-context \
	analysis-figures

all: $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

$(BUILD)/Makefile:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

test: all
	cd $(BUILD) && ctest --output-on-failure --no-tests=error -j $(JOBS)

# Installs the CLI, libposemb (.so and .a), headers, posemb.pc, the Python
# module and the docs under PREFIX (default /usr/local).
PREFIX ?=
install: all
	cmake --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX))

# Without MPI: LeakSanitizer would report Open MPI's own allocations, not posemb's.
asan:
	$(MAKE) BUILD=build-asan CMAKE_FLAGS="-DPOSEMB_SANITIZE=ON -DPOSEMB_MPI=OFF -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS)" test

deps:
	scripts/install-deps

# The libFuzzer harnesses of fuzz/ (clang, ASan + UBSan), each run for
# FUZZ_SECONDS on its seed corpus (fuzz/README.md; scripts/install-deps --fuzz).
FUZZ_SECONDS ?= 20
fuzz:
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPOSEMB_FUZZ=ON
	cmake --build build-fuzz -j $(JOBS)
	fuzz/run build-fuzz $(FUZZ_SECONDS)

# The layout of .clang-format (clang-format: scripts/install-deps --fuzz):
# format rewrites the sources, format-check (CI) fails on any difference.
SOURCES = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
format:
	@clang-format -i $(SOURCES)

format-check:
	@clang-format --dry-run --Werror $(SOURCES) && echo "format-check: $(words $(SOURCES)) files follow .clang-format"

demo: all
	$(BUILD)/posemb demo

# The main job: the embedded-default study, its tables and report in posemb-study/.
study: all
	$(BUILD)/posemb study --out posemb-study

# The claims register from the committed results (results/claims.csv) and its
# forest plot (docs/images/claims.png): docs/study.md, "The register".
claims: all
	scripts/claims --write > /dev/null
	$(BUILD)/posemb plot forest results/claims.csv --out docs/images/claims.png \
		--title "Published claims tested by posemb (95% intervals)"

# README's pair (docs/analysis.md, "Example: GPT-2's table and the sinusoid"): the cosine similarity of
# GPT-2's position table (GPT2_PE, its wpe.weight) and of the 1024 x 768 sinusoid, drawn by posemb analyze.
GPT2_PE ?= ../shared/models/gpt2/gpt2_pe.safetensors
analysis-figures: all
	$(BUILD)/posemb analyze $(GPT2_PE) --tensor wpe.weight --out $(BUILD)/gpt2-table > /dev/null
	$(BUILD)/posemb analyze sin --len 1024 --dim 768 --out $(BUILD)/sin-1024 > /dev/null
	cp $(BUILD)/gpt2-table/similarity_cosine.png docs/images/gpt2_wpe_cosine.png
	cp $(BUILD)/sin-1024/similarity_cosine.png docs/images/sin_cosine.png

# Issue 51's figures (docs/study-position-learning-results.md): word-order cost over
# pretraining, the final models' against each axis, their held-out loss against
# none's where none ran at each setting, and the onset over 24,000 steps, from the committed read-outs
# of results/position-learning/.
position-learning: all
	python3 results/position-learning/phase.py > /dev/null
	$(BUILD)/posemb plot lines results/position-learning/phase.csv --reference "rpe, the study's recipe (draw 2)" \
		--markers --cols 3 --xlabel "pretraining step" --ylabel "word-order cost (nats per masked token)" \
		--out docs/images/position_learning.png
	python3 results/position-learning/axes.py
	$(BUILD)/posemb plot lines results/position-learning/phase_axes.csv --markers --cols 3 \
		--xlabel "log2 of the setting over the study's recipe" --ylabel "word-order cost (nats per masked token)" \
		--out docs/images/position_learning_axes.png
	$(BUILD)/posemb plot lines results/position-learning/phase_heldout.csv --reference "none (the reference)" \
		--markers --cols 3 --xlabel "log2 of the setting over the study's recipe" \
		--ylabel "held-out MLM loss minus none's (nats)" --out docs/images/position_learning_heldout.png
	python3 results/position-learning/slice24/onset.py > /dev/null
	$(BUILD)/posemb plot lines results/position-learning/slice24/onset.csv --markers --cols 1 \
		--xlabel "pretraining step" --ylabel "word-order cost (nats per masked token)" \
		--out docs/images/position_learning_onset.png

# Issue 56's figures from the committed lines: the RoPE fine-tunes' curves
# (results/length/extend/), where rotary models put their norm (results/length/frequencies/),
# which errors each PE makes reversing (results/lengthgen/content/), the 2025 attentions past
# training (results/length/modern/) and the sinks' curve (results/length/sinks/).
long-context: all
	python3 results/length/extend/curves.py > /dev/null
	$(BUILD)/posemb plot lines results/length/extend/curves.csv --markers --cols 2 \
		--xlabel "fine-tuning step" --ylabel "perplexity at the new length" --out docs/images/extend_curves.png
	python3 results/length/frequencies/pairs.py
	$(BUILD)/posemb plot lines results/length/frequencies/pairs.csv --markers --cols 2 \
		--xlabel "rotation pair (1 = fastest)" --ylabel "share of the pair norms" --out docs/images/rope_pairs.png
	python3 results/lengthgen/content/routes.py
	$(BUILD)/posemb plot lines results/lengthgen/content/routes.csv --markers --cols 4 \
		--xlabel "symbols (log2)" --ylabel "share of wrong tokens minus chance" \
		--title "Reversing and copying at 84 tokens (2x): which errors each PE makes" --out docs/images/content_routes.png
	python3 results/length/modern/figure.py > $(BUILD)/length_modern.csv
	$(BUILD)/posemb plot lines $(BUILD)/length_modern.csv --markers --out docs/images/length_modern.png \
		--xlabel "log2(context / 128); trained at 128" --ylabel "perplexity (bytes), mean of 3 seeds" \
		--title "Stick-breaking, PoPE and PaTH past the training length, beside ALiBi"
	python3 results/length/sinks/curve.py
	$(BUILD)/posemb plot lines results/length/sinks/curve.csv --markers --cols 2 --free-x \
		--xlabel "training step" --ylabel "largest head's first-token attention" --out docs/images/sink_curve.png

clean:
	rm -rf build build-asan build-fuzz
