from tuner_sim import stock
from tuner_sim.server import main


main(stock)
