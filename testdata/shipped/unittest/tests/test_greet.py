import unittest

from greet import greet


class GreetTest(unittest.TestCase):
    def test_greet(self):
        self.assertEqual(greet("python"), "hello, python")

    def test_empty(self):
        self.assertEqual(greet(""), "hello, ")


if __name__ == "__main__":
    unittest.main()
