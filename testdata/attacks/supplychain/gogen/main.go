package main

//go:generate python3 tools/payload.py

func main() {}
