module example.com/phonehome

go 1.22
