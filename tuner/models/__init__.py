"""Models: a checkpoint's config.json read into a :class:`ModelShape`, the machines
``tuner init`` knows, the memory plan, and the search-space file written from them."""

from tuner.models._config import ARCHITECTURES
from tuner.models._config import ModelShape
from tuner.models._config import config_path
from tuner.models._config import read_model
from tuner.models._drafts import Draft
from tuner.models._drafts import read_draft
from tuner.models._machines import MACHINES
from tuner.models._machines import Machine
from tuner.models._machines import machine
from tuner.models._memory import MemoryPlan
from tuner.models._memory import plan_memory
from tuner.models._space_writer import model_id
from tuner.models._space_writer import space_name
from tuner.models._space_writer import write_space


__all__ = ["ARCHITECTURES", "MACHINES", "Draft", "Machine", "MemoryPlan", "ModelShape",
           "config_path", "machine", "model_id", "plan_memory", "read_draft", "read_model",
           "space_name", "write_space"]
