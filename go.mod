module github.com/pairwise-canary/pairwise

go 1.26
