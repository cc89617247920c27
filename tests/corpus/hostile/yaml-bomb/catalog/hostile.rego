package tools.hostile

bomb := concat("\n", [
	"a: &a [x, x, x, x, x, x, x, x, x, x]",
	"b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]",
	"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]",
	"d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]",
	"e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]",
	"f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]",
	"g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]",
	"h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]",
	"i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]",
])

deny contains "never" if {
	input.arguments.mode == "all"
	count(yaml.unmarshal(bomb)) > 0
}
