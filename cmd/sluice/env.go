package main

import "os"

func osGetenv(name string) string { return os.Getenv(name) }
