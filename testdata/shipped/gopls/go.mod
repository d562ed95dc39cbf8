module example.com/kvserve

go 1.22
