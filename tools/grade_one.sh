#!/usr/bin/env bash
# Grade the sample class (alice, bob, carol) for one assignment in a scratch copy of the
# course and print the report: `tools/grade_one.sh 04_parallelism_advisor`. For authors
# checking a notebook they just rebuilt with `make build A=...`; the full check is make test.
set -euo pipefail
aid=${1:?usage: tools/grade_one.sh ASSIGNMENT_ID}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "/tmp/grade-$aid-XXXX")
mkdir "$tmp/course"
for name in nbgrader_config.py pyproject.toml notebooks source release samples; do
  cp -r "$root/$name" "$tmp/course/"
done
export COURSEKIT_GRADEBOOK="$tmp/gradebook.db"
py="$root/.venv/bin/python"
cd "$tmp/course"
"$py" -m coursekit.grading collect >/dev/null
"$py" -m coursekit.grading grade --assignment "$aid" --workers 1
"$py" -m coursekit.grading report >/dev/null
cat reports/grades.txt
echo "autograded notebooks (verdicts in metadata.coursekit.verdicts): $tmp/course/autograded"
