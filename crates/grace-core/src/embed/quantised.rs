//! An embedding as the stores keep it (a question's, for the gap report
//! and for joining near-repeat escalations): the unit vector's components
//! times 127 as signed bytes (a quarter of the floats' size; a cosine read
//! back is within about 0.01 of the original).

use super::{dot, normalise};

/// `vector` scaled to unit length, as signed bytes (an all-zero vector
/// stays zero).
pub fn quantise(vector: &[f32]) -> Vec<u8> {
    let norm = dot(vector, vector).sqrt();
    let scale = if norm > 0.0 { 127.0 / norm } else { 0.0 };
    vector
        .iter()
        .map(|x| (x * scale).round().clamp(-127.0, 127.0) as i8 as u8)
        .collect()
}

/// The unit vector of bytes stored by [`quantise`].
pub fn dequantise(bytes: &[u8]) -> Vec<f32> {
    let mut v: Vec<f32> = bytes.iter().map(|b| f32::from(*b as i8)).collect();
    normalise(&mut v);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::cosine;

    #[test]
    fn a_round_trip_keeps_cosines_and_direction() {
        // Two 384-dimensional vectors from a fixed sequence, not unit.
        let a: Vec<f32> = (0..384)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
            .collect();
        let b: Vec<f32> = (0..384)
            .map(|i| ((i * 53 % 97) as f32 - 48.0) / 3.0 + a[i] / 2.0)
            .collect();
        let (qa, qb) = (dequantise(&quantise(&a)), dequantise(&quantise(&b)));
        assert_eq!(quantise(&a).len(), 384);
        assert!((cosine(&a, &b) - cosine(&qa, &qb)).abs() < 0.01);
        assert!(cosine(&a, &qa) > 0.999);
        let norm: f32 = qa.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
    }

    #[test]
    fn hostile_values_stay_bounded() {
        assert_eq!(dequantise(&quantise(&[0.0; 4])), vec![0.0; 4]);
        let q = quantise(&[f32::MAX, -f32::MAX, 1.0]);
        assert!(q.iter().all(|b| (*b as i8) >= -127));
        assert!(dequantise(&[]).is_empty());
    }
}
