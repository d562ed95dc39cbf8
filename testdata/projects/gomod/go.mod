module example.com/sysprof/gomod

go 1.26
