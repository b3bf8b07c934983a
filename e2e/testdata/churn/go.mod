module github.com/redlockctl/redlockctl/e2e/live/testdata/churn

go 1.26.0

require (
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/gomodule/redigo v1.9.3
	github.com/redlockctl/redlockctl v0.0.0
)

replace github.com/redlockctl/redlockctl => ../../..
