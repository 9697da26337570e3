package store

var keyCommands = map[string]handler{
	"del": del,
}

func del(c *ctx, args [][]byte) {
	n := int64(0)
	for _, k := range args[1:] {
		if c.del(k) {
			n++
		}
	}
	c.w.Int(n)
}
