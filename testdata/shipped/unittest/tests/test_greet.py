import tempfile
import unittest

from greet import greet


class GreetTest(unittest.TestCase):
    def test_greet(self):
        self.assertEqual(greet("python"), "hello, python")

    def test_temp_file(self):
        # Tests commonly write scratch files in the temp directory.
        with tempfile.TemporaryDirectory() as d, open(d + "/out.txt", "w") as f:
            f.write(greet("tmp"))


if __name__ == "__main__":
    unittest.main()
