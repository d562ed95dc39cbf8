module example.com/gogen

go 1.21
