"""Search spaces: the YAML schema, loading with located errors, domains and conditions."""

from tuner.space._config import Config
from tuner.space._config import value_key
from tuner.space._load import load_space
from tuner.space._load import parse_space
from tuner.space._schema import Evidence
from tuner.space._schema import Gate
from tuner.space._schema import Regime
from tuner.space._schema import Sla
from tuner.space._schema import SpaceFile
from tuner.space._schema import Workload
from tuner.space._schema import shares_problem
from tuner.space._space import SearchSpace
from tuner.space._space import condition_matches
from tuner.space._yaml import read_yaml_file


__all__ = ["Config", "Evidence", "Gate", "Regime", "SearchSpace", "Sla", "SpaceFile", "Workload",
           "condition_matches", "load_space", "parse_space", "read_yaml_file", "shares_problem",
           "value_key"]
