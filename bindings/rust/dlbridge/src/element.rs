//! Rust types that map to a DLPack dtype.

use crate::DType;

/// A Rust type whose values are stored exactly like elements of [`Element::DTYPE`].
///
/// # Safety
/// Implementors promise that `Self` has the size of one element of `DTYPE`
/// (`bits * lanes / 8` bytes, whole bytes only), native byte order, no padding, alignment no
/// larger than its size, and that every bit pattern the dtype allows is a valid `Self` (or that
/// [`Element::valid_bytes`] rejects the others).
pub unsafe trait Element: Copy + Send + Sync + 'static {
    /// The dtype of this element type.
    const DTYPE: DType;

    /// Checks raw element bytes before they are viewed as `Self`. The default accepts all bytes;
    /// `bool` accepts only 0 and 1 (any other byte would be undefined behaviour as a Rust `bool`).
    fn valid_bytes(bytes: &[u8]) -> bool {
        let _ = bytes;
        true
    }
}

macro_rules! element {
    ($($t:ty => $d:expr),* $(,)?) => {
        $(
            // SAFETY: a primitive of exactly the dtype's width, native byte order, every bit
            // pattern valid.
            unsafe impl Element for $t {
                const DTYPE: DType = $d;
            }
        )*
    };
}

element! {
    i8 => DType::INT8, i16 => DType::INT16, i32 => DType::INT32, i64 => DType::INT64,
    u8 => DType::UINT8, u16 => DType::UINT16, u32 => DType::UINT32, u64 => DType::UINT64,
    f32 => DType::FLOAT32, f64 => DType::FLOAT64,
    F16 => DType::FLOAT16, Bf16 => DType::BFLOAT16,
}

// SAFETY: one byte; bytes other than 0 and 1 are rejected by valid_bytes before any `&[bool]`
// is formed.
unsafe impl Element for bool {
    const DTYPE: DType = DType::BOOL;
    fn valid_bytes(bytes: &[u8]) -> bool {
        bytes.iter().all(|&b| b <= 1)
    }
}

/// An IEEE 754 half-precision float (`float16`), stored as its bits. Conversions to and from
/// `f32` are left to a numeric crate of your choice (`half::f16::from_bits(x.0)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct F16(pub u16);

/// A bfloat16 (the upper half of an IEEE float32), stored as its bits.
///
/// ```
/// use dlbridge::Bf16;
/// assert_eq!(Bf16::from_f32(1.5).to_f32(), 1.5);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Bf16(pub u16);

impl Bf16 {
    /// Rounds an `f32` to the nearest bfloat16 (ties to even; NaN stays NaN).
    pub fn from_f32(x: f32) -> Bf16 {
        let bits = x.to_bits();
        if x.is_nan() {
            return Bf16(((bits >> 16) as u16) | 0x40);
        }
        let round = 0x7fff + ((bits >> 16) & 1);
        Bf16((bits.wrapping_add(round) >> 16) as u16)
    }

    /// The exact `f32` value.
    pub fn to_f32(self) -> f32 {
        f32::from_bits(u32::from(self.0) << 16)
    }
}
