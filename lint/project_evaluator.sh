#!/usr/bin/env bash
# dbt Labs' dbt-project-evaluator over tidemark's DAG (issue 43), the checklist a dbt reviewer
# holds it to. dbt's package hub is out of reach here, so the two public repositories come as
# local folders: a scratch copy of the committed project gets them as local packages, the
# project's exceptions (lint/dbt_project_evaluator_exceptions.csv, each with its reason) and
# tidemark's own primary-key test registered, and builds the evaluator on the embedded Spark in
# a lake of its own (about two minutes on two cores). Prints each rule that still finds
# something. The comments of the exceptions file hold no single quote (dbt-spark inserts seed
# values as SQL literals).
#
#   lint/project_evaluator.sh DBT_PROJECT_EVALUATOR_DIR DBT_UTILS_DIR
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 DBT_PROJECT_EVALUATOR_DIR DBT_UTILS_DIR" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
mkdir -p "$work/packages" "$work/project/seeds"
cp -r "$1" "$work/packages/dbt_project_evaluator"
cp -r "$2" "$work/packages/dbt_utils"
printf 'packages:\n  - local: %s\n' "$work/packages/dbt_utils" \
  > "$work/packages/dbt_project_evaluator/packages.yml"
git -C "$root" archive HEAD | tar -x -C "$work/project"
cd "$work/project"
printf 'packages:\n  - local: %s\n  - local: %s\n' \
  "$work/packages/dbt_utils" "$work/packages/dbt_project_evaluator" > packages.yml
cp "$root/lint/dbt_project_evaluator_exceptions.csv" seeds/
# The project's exceptions replace the package's empty seed (the evaluator reads them only then).
printf '\nseeds:\n  dbt_project_evaluator:\n    dbt_project_evaluator_exceptions:\n      +enabled: false\n' \
  >> dbt_project.yml
export TIDEMARK_LAKE="$work/lake" DBT_TARGET_PATH="$work/target" DBT_LOG_PATH="$work/logs"
dbt="$root/.venv/bin/dbt"
"$dbt" deps --quiet
# tidemark's key tests: tidemark_unique_combination, or dbt's unique, with tidemark_not_null on
# the same model.
keys='[["dbt.test_unique", "dbt.test_not_null"], ["dbt_utils.test_unique_combination_of_columns"],
  ["tidemark.test_tidemark_unique_combination", "tidemark.test_tidemark_not_null"],
  ["dbt.test_unique", "tidemark.test_tidemark_not_null"]]'
"$dbt" build --select package:dbt_project_evaluator dbt_project_evaluator_exceptions \
  --vars "{primary_key_test_macros: $keys}" > "$work/build.log" 2>&1 || {
  tail -40 "$work/build.log"; echo "the evaluator's build failed: $work/build.log" >&2; exit 1; }
echo "findings by rule (work in $work):"
sed 's/\x1b\[[0-9;]*m//g' "$work/build.log" | grep -E ' (WARN|FAIL) [0-9]+ ' \
  | sed -E 's/.* (WARN|FAIL) ([0-9]+) ([a-z_]+).*/\2 \3/' | sort -k2 | uniq
