from tuner_sim import fork_unshared
from tuner_sim.server import main


main(fork_unshared)
