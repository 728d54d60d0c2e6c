# Thin wrapper over CMake. `make` builds, `make test` builds and runs the
# unit tests, `make asan` does the same under AddressSanitizer + UBSan.
BUILD ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# CI builds with warnings as errors; users' newer compilers should not break the build.
ifeq ($(CI),true)
CMAKE_FLAGS += -DPOSEMB_WERROR=ON
endif

.PHONY: all test asan clean deps demo study

all: $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

$(BUILD)/Makefile:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

test: all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

asan:
	$(MAKE) BUILD=build-asan CMAKE_FLAGS="-DPOSEMB_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS)" test

deps:
	scripts/install-deps

demo: all
	$(BUILD)/posemb demo

# The main job: the embedded-default study, its tables and report in posemb-study/.
study: all
	$(BUILD)/posemb study --out posemb-study

clean:
	rm -rf build build-asan
