//! C++ classes as arm-none-eabi-g++ lays them out: members found through base classes with
//! the base's offset added, two polymorphic bases side by side, and static data members kept
//! out of the object (DWARF 4 gives them as member declarations, DWARF 5 as variables).

#![allow(clippy::unwrap_used, clippy::panic)]

use memlife_dwarf::{Symbols, TypeId, TypeTable};
use memlife_testkit::cross_elf::cxx_elf;
use memlife_testkit::process::tempdir;

const CLASSES: &str = r#"
namespace shapes {
class Named {
 public:
  virtual ~Named() {}
  virtual const char* name() const { return "named"; }
  int id_ = 1;
};
class Sized {
 public:
  virtual ~Sized() {}
  virtual int size() const { return 0; }
  static int instances_;
  short width_ = 2;
};
int Sized::instances_ = 0;
class Box : public Named, public Sized {
 public:
  int size() const override { return depth_; }
  static const int kSides = 6;
  int depth_ = 3;
};
class Crate : public Box {
 public:
  char label_ = 'c';
};
}  // namespace shapes
shapes::Crate g_crate;
enum Colour { Colour_RED = 0, Colour_GREEN = 3, Colour_MIN = Colour_RED, Colour_MAX = Colour_GREEN };
Colour g_colour = Colour_GREEN;
extern const unsigned char g_table[] = {7, 8, 9, 10};
extern "C" void _start() { for (;;) {} }
// Virtual destructors call these; nothing is deleted.
void operator delete(void*) noexcept {}
void operator delete(void*, unsigned int) noexcept {}
"#;

fn class(types: &TypeTable, name: &str) -> TypeId {
    types
        .find_qualified(name)
        .unwrap_or_else(|| panic!("{name} not in DWARF"))
}

fn check(dwarf: &str) {
    let dir = tempdir("dwarf-cpp");
    let elf = cxx_elf(&dir, &format!("classes-{dwarf}"), CLASSES, &[dwarf]);
    let symbols = Symbols::load(&elf).unwrap();
    let types = symbols.types();
    let boxed = class(types, "shapes::Box");
    let crate_ = class(types, "shapes::Crate");
    // Box: Named's vptr and id_ (0, 4), Sized's vptr and width_ (8, 12), then depth_.
    let bases: Vec<_> = types.bases(boxed).iter().map(|b| b.offset).collect();
    assert_eq!(bases, [Some(0), Some(8)], "{dwarf}");
    assert_eq!(
        types.base_offset(boxed, "shapes::Sized"),
        Some(8),
        "{dwarf}"
    );
    assert_eq!(types.base_offset(crate_, "Sized"), Some(8), "{dwarf}");
    assert_eq!(
        types.base_offset(crate_, "shapes::Crate"),
        Some(0),
        "{dwarf}"
    );
    assert_eq!(types.base_offset(boxed, "shapes::Crate"), None, "{dwarf}");
    let off = |id, name| types.find_member(id, name).map(|(o, _)| o);
    assert_eq!(off(boxed, "id_"), Some(4), "{dwarf}");
    assert_eq!(off(boxed, "width_"), Some(12), "{dwarf}");
    assert_eq!(off(boxed, "depth_"), Some(16), "{dwarf}");
    assert_eq!(off(crate_, "width_"), Some(12), "{dwarf}");
    assert_eq!(off(crate_, "label_"), Some(20), "{dwarf}");
    // Static data members have no offset in the object.
    assert_eq!(off(boxed, "instances_"), None, "{dwarf}");
    assert_eq!(off(boxed, "kSides"), None, "{dwarf}");
    assert!(
        types
            .member(class(types, "shapes::Sized"), "instances_")
            .is_none()
    );
    // The vtable pointers are members too (GCC names them `_vptr.Class`).
    assert_eq!(off(crate_, "_vptr.Sized"), Some(8), "{dwarf}");
}

#[test]
fn enums_by_name_and_constants_with_their_section() {
    let dir = tempdir("dwarf-cpp");
    let elf = cxx_elf(&dir, "enums", CLASSES, &[]);
    let symbols = Symbols::load(&elf).unwrap();
    let types = symbols.types();
    let colour = types.find_enum("Colour").unwrap();
    let Some(memlife_dwarf::Type::Enum { variants, .. }) = types.get(colour) else {
        panic!("Colour is not an enum");
    };
    assert!(
        variants.contains(&("Colour_GREEN".to_string(), 3)),
        "{variants:?}"
    );
    assert_eq!(types.find_enum("Shade"), None);
    let table = symbols.variable("g_table", &[]).unwrap().address.unwrap();
    let (start, bytes) = symbols.rodata_section(table + 2).unwrap();
    let off = usize::try_from(table - start).unwrap();
    assert_eq!(&bytes[off..off + 4], &[7, 8, 9, 10]);
    assert!(
        symbols
            .rodata_section(start + bytes.len() as u64)
            .is_none_or(|(s, _)| s != start)
    );
    let crate_addr = symbols.variable("g_crate", &[]).unwrap().address.unwrap();
    assert!(
        symbols.rodata_section(crate_addr).is_none(),
        "g_crate is not constant"
    );
}

#[test]
fn members_are_found_through_base_classes_dwarf5() {
    check("-gdwarf-5");
}

#[test]
fn members_are_found_through_base_classes_dwarf4() {
    check("-gdwarf-4");
}
