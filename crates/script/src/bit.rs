//! LuaJIT's `bit` library (BitOp) for the Lua 5.1 interpreter of the static build, so scripts
//! written for wrk's LuaJIT keep working: every operation works on 32-bit integers and
//! returns a signed 32-bit result, as BitOp does.

use mlua::{Lua, Table, Variadic};

/// BitOp's argument normalisation: numbers are taken modulo 2^32.
fn norm(n: f64) -> i32 {
    (n as i64 as u64 & 0xffff_ffff) as u32 as i32
}

fn fold(args: &Variadic<f64>, op: impl Fn(i32, i32) -> i32) -> mlua::Result<i32> {
    let mut it = args.iter().map(|&n| norm(n));
    let first = it
        .next()
        .ok_or_else(|| mlua::Error::runtime("bad argument #1 (number expected, got no value)"))?;
    Ok(it.fold(first, op))
}

/// Adds `bit` to a Lua 5.1 state; LuaJIT has its own (and the tests below hold both to
/// BitOp's documented results).
pub(crate) fn install(lua: &Lua) -> mlua::Result<()> {
    if cfg!(feature = "luajit") {
        return Ok(());
    }
    let bit: Table = lua.create_table()?;
    bit.set("tobit", lua.create_function(|_, n: f64| Ok(norm(n)))?)?;
    bit.set("bnot", lua.create_function(|_, n: f64| Ok(!norm(n)))?)?;
    bit.set(
        "band",
        lua.create_function(|_, a: Variadic<f64>| fold(&a, |x, y| x & y))?,
    )?;
    bit.set(
        "bor",
        lua.create_function(|_, a: Variadic<f64>| fold(&a, |x, y| x | y))?,
    )?;
    bit.set(
        "bxor",
        lua.create_function(|_, a: Variadic<f64>| fold(&a, |x, y| x ^ y))?,
    )?;
    let shift = |f: fn(i32, u32) -> i32| {
        move |_: &Lua, (x, n): (f64, f64)| Ok(f(norm(x), norm(n) as u32 & 31))
    };
    bit.set(
        "lshift",
        lua.create_function(shift(|x, n| ((x as u32) << n) as i32))?,
    )?;
    bit.set(
        "rshift",
        lua.create_function(shift(|x, n| ((x as u32) >> n) as i32))?,
    )?;
    bit.set("arshift", lua.create_function(shift(|x, n| x >> n))?)?;
    bit.set(
        "rol",
        lua.create_function(shift(|x, n| (x as u32).rotate_left(n) as i32))?,
    )?;
    bit.set(
        "ror",
        lua.create_function(shift(|x, n| (x as u32).rotate_right(n) as i32))?,
    )?;
    bit.set(
        "bswap",
        lua.create_function(|_, n: f64| Ok(norm(n).swap_bytes()))?,
    )?;
    bit.set(
        "tohex",
        lua.create_function(|_, (x, n): (f64, Option<f64>)| {
            let x = norm(x) as u32;
            let n = n.map_or(8, |n| n as i32);
            let (width, upper) = (n.unsigned_abs().min(8) as usize, n < 0);
            let text = format!("{x:08x}");
            let text = &text[8 - width..];
            Ok(if upper {
                text.to_uppercase()
            } else {
                text.to_string()
            })
        })?,
    )?;
    lua.globals().set("bit", bit.clone())?;
    let loaded: Table = lua.globals().get::<Table>("package")?.get("loaded")?;
    loaded.set("bit", bit)
}

#[cfg(test)]
mod tests {
    /// Values from LuaJIT's BitOp documentation: the same results as under wrk's LuaJIT.
    #[test]
    fn bit_matches_luajit_bitop() {
        let lua = mlua::Lua::new();
        super::install(&lua).unwrap();
        let cases = [
            ("bit.tobit(0xffffffff)", "-1"),
            ("bit.tobit(0xffffffff + 1)", "0"),
            ("bit.tohex(1)", "00000001"),
            ("bit.tohex(-1, -8)", "FFFFFFFF"),
            ("bit.tohex(0x87654321, 4)", "4321"),
            ("bit.bnot(0)", "-1"),
            ("bit.bor(1, 2, 4, 8)", "15"),
            ("bit.band(0x12345678, 0xff)", "120"),
            ("bit.bxor(0xa5a5f0f0, 0xaa55ff00)", "267390960"),
            ("bit.lshift(1, 31)", "-2147483648"),
            ("bit.rshift(-1, 28)", "15"),
            ("bit.arshift(-256, 8)", "-1"),
            ("bit.rol(0x12345678, 12)", "1164411171"),
            ("bit.ror(0x12345678, 12)", "1736516421"),
            ("bit.bswap(0x12345678)", "2018915346"),
            ("require('bit') == bit", "true"),
        ];
        for (code, want) in cases {
            let got: String = lua.load(format!("return tostring({code})")).eval().unwrap();
            assert_eq!(got, want, "{code}");
        }
    }
}
