package store

var stringCommands = map[string]handler{
	"get": get,
}

func get(c *ctx, args [][]byte) {
	e := c.get(args[1])
	if e == nil {
		c.w.Null()
		return
	}
	c.w.Bulk(e.v.bytes())
}
