"""One definition of every name and figure a reader sees, for C++ and
Python (issue 30; Note [One formatter per unit] in lib/report/units.h): the
same inputs rendered through both languages read the same. The cases are
labels_cases.py's, each run in a fresh Python (the library renders them,
and is never mapped into pytest's own process)."""
import pytest

from conftest import needs_library, run_in_child


@needs_library
@pytest.mark.parametrize("case", [
    "every_unit_reads_as_the_spec_both_languages_read",
    "the_python_keys_are_the_librarys_and_lost_is_its_rule",
    "one_ranks_summary_reads_the_same_in_its_text_compare_and_the_job_report",
    "the_comparison_catches_a_python_copy_of_a_formatter",
    "findings_the_library_refuses_raise_one_line",
])
def test_labels(case):
    run_in_child("labels_cases", case)
