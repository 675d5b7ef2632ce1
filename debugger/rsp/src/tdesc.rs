//! Target descriptions: which registers a server has, their numbers and where they sit in `g`.
//!
//! The XML (`qXfer:features:read:target.xml`) is scanned, not fully parsed: only `<reg>` elements
//! and `<xi:include href=..>` matter, in document order, because a `<reg>` without `regnum` takes
//! the number after the previous register, across included files. The `g` packet holds the
//! registers in number order, each taking `bitsize / 8` bytes, with unused numbers taking no
//! space (as gdb lays it out); registers past the end of a server's `g` reply are read with `p`.

use memlife_core::{Result, TargetError};

/// Bound on included files, so a server including itself cannot loop us.
const MAX_FILES: usize = 32;

/// One register of the description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterInfo {
    /// Name as the server spells it (`r0`, `sp`, `xpsr`).
    pub name: String,
    /// GDB register number (for `p`/`P`).
    pub regnum: u32,
    /// Width in bits.
    pub bitsize: u32,
    /// Byte offset in the `g` reply.
    pub offset: usize,
}

impl RegisterInfo {
    /// Width in bytes (rounded up).
    pub fn size(&self) -> usize {
        self.bitsize.div_ceil(8) as usize
    }
}

/// The registers of a target, sorted by number.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegisterLayout {
    regs: Vec<RegisterInfo>,
}

/// A `<reg>` or an include, in document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// `<reg name= bitsize= [regnum=]>`.
    Reg {
        /// `name`.
        name: String,
        /// `bitsize`.
        bitsize: u32,
        /// `regnum`, when given.
        regnum: Option<u32>,
    },
    /// `<xi:include href=...>`.
    Include(String),
}

/// Scans one XML document for registers and includes.
pub fn scan(xml: &str) -> Result<Vec<Item>> {
    let mut items = Vec::new();
    let mut rest = xml;
    while let Some(lt) = rest.find('<') {
        rest = &rest[lt + 1..];
        if let Some(comment) = rest.strip_prefix("!--") {
            let end = comment.find("-->").ok_or_else(|| {
                TargetError::Protocol("target description: unclosed comment".into())
            })?;
            rest = &comment[end + 3..];
            continue;
        }
        let end = rest
            .find('>')
            .ok_or_else(|| TargetError::Protocol("target description: unclosed tag".into()))?;
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        if let Some(attrs) = tag.strip_prefix("reg ") {
            let name = attr(attrs, "name").ok_or_else(|| {
                TargetError::Protocol("target description: reg without name".into())
            })?;
            let bitsize = attr(attrs, "bitsize")
                .and_then(|v| v.parse().ok())
                .filter(|&b| b > 0 && b <= 4096)
                .ok_or_else(|| {
                    TargetError::Protocol(format!("target description: bad bitsize for {name}"))
                })?;
            let regnum = match attr(attrs, "regnum") {
                Some(v) => Some(v.parse().map_err(|_| {
                    TargetError::Protocol(format!("target description: bad regnum for {name}"))
                })?),
                None => None,
            };
            items.push(Item::Reg {
                name: name.to_string(),
                bitsize,
                regnum,
            });
        } else if let Some(attrs) = tag.strip_prefix("xi:include ")
            && let Some(href) = attr(attrs, "href")
        {
            items.push(Item::Include(href.to_string()));
        }
    }
    Ok(items)
}

/// The value of `key="..."` (or single quotes) in a tag's attribute text.
fn attr<'a>(attrs: &'a str, key: &str) -> Option<&'a str> {
    let mut rest = attrs;
    loop {
        let at = rest.find(key)?;
        let before_ok = at == 0 || rest[..at].ends_with(char::is_whitespace);
        let after = rest[at + key.len()..].trim_start();
        rest = &rest[at + key.len()..];
        if !before_ok {
            continue;
        }
        let Some(after) = after.strip_prefix('=') else {
            continue;
        };
        let after = after.trim_start();
        let quote = after.chars().next()?;
        if quote != '"' && quote != '\'' {
            return None;
        }
        let value = &after[1..];
        return value.find(quote).map(|end| &value[..end]);
    }
}

/// Loads `target.xml` and everything it includes through `fetch` (which reads one annex).
pub fn load(mut fetch: impl FnMut(&str) -> Result<String>) -> Result<RegisterLayout> {
    let mut regs = Vec::new();
    let mut files = 0;
    // Depth-first, keeping document order: a stack of pending item lists.
    let mut stack = vec![scan(&fetch("target.xml")?)?.into_iter()];
    files += 1;
    while let Some(top) = stack.last_mut() {
        match top.next() {
            None => {
                stack.pop();
            }
            Some(Item::Include(href)) => {
                files += 1;
                if files > MAX_FILES {
                    return Err(TargetError::Protocol(format!(
                        "target description includes more than {MAX_FILES} files"
                    )));
                }
                let items = scan(&fetch(&href)?)?;
                stack.push(items.into_iter());
            }
            Some(Item::Reg {
                name,
                bitsize,
                regnum,
            }) => regs.push((name, bitsize, regnum)),
        }
    }
    Ok(RegisterLayout::from_regs(regs))
}

impl RegisterLayout {
    /// Builds a layout from registers in document order; missing numbers continue from the
    /// previous register, duplicates keep the first.
    pub fn from_regs(list: Vec<(String, u32, Option<u32>)>) -> Self {
        let mut next = 0u32;
        let mut regs: Vec<RegisterInfo> = Vec::with_capacity(list.len());
        for (name, bitsize, regnum) in list {
            let regnum = regnum.unwrap_or(next);
            next = regnum.saturating_add(1);
            if regs.iter().any(|r| r.regnum == regnum) {
                tracing::warn!(
                    name,
                    regnum,
                    "duplicate register number in target description"
                );
                continue;
            }
            regs.push(RegisterInfo {
                name,
                regnum,
                bitsize,
                offset: 0,
            });
        }
        regs.sort_by_key(|r| r.regnum);
        let mut offset = 0;
        for r in &mut regs {
            r.offset = offset;
            offset += r.size();
        }
        RegisterLayout { regs }
    }

    /// The layout assumed when a server has no description: ARM r0..r15 as the first 16 words
    /// and, in QEMU's classic `g` layout (eight 12-byte FPA registers and fps in between), xpsr at
    /// byte 164.
    pub fn arm_fallback() -> Self {
        let mut regs: Vec<RegisterInfo> = (0..16u32)
            .map(|n| RegisterInfo {
                name: match n {
                    13 => "sp".to_string(),
                    14 => "lr".to_string(),
                    15 => "pc".to_string(),
                    n => format!("r{n}"),
                },
                regnum: n,
                bitsize: 32,
                offset: n as usize * 4,
            })
            .collect();
        regs.push(RegisterInfo {
            name: "xpsr".into(),
            regnum: 25,
            bitsize: 32,
            offset: 164,
        });
        RegisterLayout { regs }
    }

    /// All registers, by number.
    pub fn registers(&self) -> &[RegisterInfo] {
        &self.regs
    }

    /// The register with this GDB number.
    pub fn by_number(&self, regnum: u32) -> Option<&RegisterInfo> {
        self.regs.iter().find(|r| r.regnum == regnum)
    }

    /// The register with this name (case-insensitive).
    pub fn by_name(&self, name: &str) -> Option<&RegisterInfo> {
        self.regs.iter().find(|r| r.name.eq_ignore_ascii_case(name))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    const TARGET: &str = r#"<?xml version="1.0"?><!DOCTYPE target SYSTEM "gdb-target.dtd"><target><architecture>arm</architecture><xi:include href="arm-m-profile.xml"/><xi:include href="arm-vfp.xml"/><xi:include href="system-registers.xml"/></target>"#;
    const M_PROFILE: &str = r#"<?xml version="1.0"?>
<!-- comment <reg name="fake" bitsize="8"/> -->
<feature name="org.gnu.gdb.arm.m-profile">
  <reg name="r0" bitsize="32"/>
  <reg name="r1" bitsize="32"/><reg name="r2" bitsize="32"/><reg name="r3" bitsize="32"/>
  <reg name="r4" bitsize="32"/><reg name="r5" bitsize="32"/><reg name="r6" bitsize="32"/>
  <reg name="r7" bitsize="32"/><reg name="r8" bitsize="32"/><reg name="r9" bitsize="32"/>
  <reg name="r10" bitsize="32"/><reg name="r11" bitsize="32"/><reg name="r12" bitsize="32"/>
  <reg name="sp" bitsize="32" type="data_ptr"/>
  <reg name="lr" bitsize="32"/>
  <reg name="pc" bitsize="32" type="code_ptr"/>
  <reg name="xpsr" bitsize="32" regnum="25"/>
</feature>"#;
    const VFP: &str = r#"<feature name="org.gnu.gdb.arm.vfp">
  <reg name="d0" bitsize="64" type="ieee_double"/>
  <reg name="d1" bitsize="64" type="ieee_double"/>
  <reg name="fpscr" bitsize='32' type="int" group="float"/>
</feature>"#;

    fn fetch(name: &str) -> Result<String> {
        match name {
            "target.xml" => Ok(TARGET.into()),
            "arm-m-profile.xml" => Ok(M_PROFILE.into()),
            "arm-vfp.xml" => Ok(VFP.into()),
            "system-registers.xml" => Ok(r#"<feature name="x"></feature>"#.into()),
            _ => Err(TargetError::Protocol(format!("no {name}"))),
        }
    }

    #[test]
    fn follows_includes_with_implicit_numbers() {
        let layout = load(fetch).unwrap();
        let names: Vec<_> = layout.registers().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names[..3], ["r0", "r1", "r2"], "comments are skipped");
        let pc = layout.by_name("pc").unwrap();
        let xpsr = layout.by_name("xpsr").unwrap();
        assert_eq!(xpsr.regnum, 25);
        let d0 = layout.by_name("d0").unwrap();
        assert_eq!(d0.regnum, 26, "implicit numbering continues after xpsr");
        assert_eq!(layout.by_name("fpscr").unwrap().regnum, 28);
        assert_eq!(d0.offset, xpsr.offset + 4);
        assert_eq!(xpsr.offset, pc.offset + 4);
    }

    #[test]
    fn offsets_in_number_order() {
        let layout = RegisterLayout::from_regs(vec![
            ("b".into(), 32, Some(5)),
            ("c".into(), 16, None),
            ("a".into(), 64, Some(0)),
            ("d".into(), 32, Some(5)),
        ]);
        let r: Vec<_> = layout
            .registers()
            .iter()
            .map(|r| (r.name.as_str(), r.regnum, r.offset))
            .collect();
        assert_eq!(r, vec![("a", 0, 0), ("b", 5, 8), ("c", 6, 12)]);
    }

    #[test]
    fn include_loop_is_bounded() {
        let err = load(|_| Ok(r#"<xi:include href="target.xml"/>"#.to_string())).unwrap_err();
        assert!(matches!(err, TargetError::Protocol(_)));
    }

    #[test]
    fn invalid_descriptions() {
        assert!(scan(r#"<reg name="r0" bitsize="x"/>"#).is_err());
        assert!(scan(r#"<reg name="r0" bitsize="0"/>"#).is_err());
        assert!(scan(r#"<reg bitsize="32"/>"#).is_err());
        assert!(scan(r#"<reg name="r0" bitsize="32" regnum="-1"/>"#).is_err());
        assert!(scan(r#"<reg name="r0" bitsize="32""#).is_err());
    }

    #[test]
    fn attribute_lookup_is_exact() {
        assert_eq!(attr(r#"bitsize="32" name="pc""#, "name"), Some("pc"));
        assert_eq!(attr(r#"xname="a" name='b'"#, "name"), Some("b"));
        assert_eq!(attr(r#"name=pc"#, "name"), None);
    }

    #[test]
    fn arm_fallback_layout() {
        let l = RegisterLayout::arm_fallback();
        assert_eq!(l.by_number(15).unwrap().offset, 60);
        assert_eq!(l.by_name("xpsr").unwrap().offset, 164);
    }
}
