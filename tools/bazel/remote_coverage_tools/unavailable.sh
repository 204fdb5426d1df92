#!/bin/sh
echo "bazel coverage needs coverage_output_generator-v2.5.zip from mirror.bazel.build, which this offline" \
     "workspace does not have: use bazel test, or measure coverage with pytest." >&2
exit 1
