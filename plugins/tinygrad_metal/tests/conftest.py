import os, sys
# the shared kernel builders and the fake Metal module live next to the tests
sys.path.insert(0, os.path.dirname(__file__))
