"""Search spaces: the YAML schema, loading with located errors, domains and conditions."""

from tuner.space._config import Config
from tuner.space._config import value_key
from tuner.space._load import load_space
from tuner.space._load import parse_space
from tuner.space._schema import Evidence
from tuner.space._schema import Gate
from tuner.space._schema import SpaceFile
from tuner.space._schema import Workload
from tuner.space._space import SearchSpace


__all__ = ["Config", "Evidence", "Gate", "SearchSpace", "SpaceFile", "Workload", "load_space",
           "parse_space", "value_key"]
