"""A tiny module for the shipped python3 profile's fixture."""


def greeting(name):
    return "hello, " + name.strip()
