module example.test/helper

go 1.21
