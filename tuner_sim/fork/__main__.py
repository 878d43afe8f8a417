from tuner_sim import fork
from tuner_sim.server import main


main(fork)
