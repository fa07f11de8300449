"""A corpus of bad inputs for every command and format, built by code (``cases``)."""

from bad_inputs.commands import model_cases, option_cases
from bad_inputs.corpus import Case, cluster_yaml_cases, jobs_cases, spec_cases, trace_cases
from bad_inputs.edges import edge_cases


def cases() -> list[Case]:
    return (trace_cases() + spec_cases() + cluster_yaml_cases() + jobs_cases() + model_cases() + option_cases()
            + edge_cases())
