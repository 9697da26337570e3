package bitprobe

import (
	"reflect"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
)

// The layout of roaring/v2's bitmaps, as of v2.30.0: a Bitmap is its
// roaringArray; a container is an interface value, an *arrayContainer,
// a *bitmapContainer or a *runContainer16.
type (
	roaringArray struct {
		keys            []uint16
		containers      []iface
		needCopyOnWrite []bool
		copyOnWrite     bool
	}
	// iface is an interface value: its method table, which names its
	// dynamic type, and a pointer to the value.
	iface struct {
		tab  unsafe.Pointer
		data unsafe.Pointer
	}
	arrayContainer struct {
		content []uint16
	}
	bitmapContainer struct {
		cardinality int
		bitmap      []uint64
	}
)

// roaringPkg is the package whose types the layout copies.
const roaringPkg = "github.com/RoaringBitmap/roaring/v2"

var (
	// layoutOK reports whether roaring's types are laid out as above.
	layoutOK bool
	// arrayTab and bitmapTab are the method tables of a container that
	// is an array or a bitmap.
	arrayTab, bitmapTab unsafe.Pointer
)

func init() {
	array := roaring.BitmapOf(1)
	bitmap := roaring.New()
	for x := uint32(0); x < 2*4096+2; x += 2 { // past an array's 4,096 values
		bitmap.Add(x)
	}
	arrayType, ok := containerType(array)
	if !ok || !sameLayout(arrayType, arrayContainer{}, "arrayContainer") {
		return
	}
	bitmapType, ok := containerType(bitmap)
	if !ok || !sameLayout(bitmapType, bitmapContainer{}, "bitmapContainer") {
		return
	}
	arrayTab = (*roaringArray)(unsafe.Pointer(array)).containers[0].tab
	bitmapTab = (*roaringArray)(unsafe.Pointer(bitmap)).containers[0].tab
	layoutOK = arrayTab != bitmapTab
}

// containerType checks that rb is laid out as a roaringArray of one
// container and returns the type the container points to.
func containerType(rb *roaring.Bitmap) (reflect.Type, bool) {
	b := reflect.ValueOf(rb).Elem()
	if b.NumField() != 1 || b.Field(0).Type().Size() != b.Type().Size() {
		return nil, false
	}
	ra := b.Field(0)
	if !sameLayout(ra.Type(), roaringArray{}, "roaringArray") || ra.Field(1).Len() != 1 {
		return nil, false
	}
	c := ra.Field(1).Index(0)
	if c.Kind() != reflect.Interface || c.IsNil() || c.Elem().Kind() != reflect.Pointer {
		return nil, false
	}
	return c.Elem().Type().Elem(), true
}

// sameLayout reports whether t, a struct type of roaring's named name,
// has the fields of mirror, of the same names, kinds and offsets, and the
// same size.
func sameLayout(t reflect.Type, mirror any, name string) bool {
	m := reflect.TypeOf(mirror)
	if t.Kind() != reflect.Struct || t.Name() != name || t.PkgPath() != roaringPkg ||
		t.NumField() != m.NumField() || t.Size() != m.Size() {
		return false
	}
	for i := range t.NumField() {
		f, g := t.Field(i), m.Field(i)
		if f.Name != g.Name || f.Offset != g.Offset || !sameKind(f.Type, g.Type) {
			return false
		}
	}
	return true
}

// sameKind reports whether a field of roaring's of type t can be read as
// one of the mirror's of type m: the same type, or (for the containers)
// a slice of interfaces read as a slice of iface.
func sameKind(t, m reflect.Type) bool {
	if t == m {
		return true
	}
	return t.Kind() == reflect.Slice && m.Kind() == reflect.Slice &&
		t.Elem().Kind() == reflect.Interface && t.Elem().NumMethod() > 0 &&
		m.Elem() == reflect.TypeOf(iface{})
}
