"""The fixture's script: imports a sibling module and prints a greeting."""
import sys

from greet import greeting

if __name__ == "__main__":
    print(greeting(sys.argv[1] if len(sys.argv) > 1 else "python"))
