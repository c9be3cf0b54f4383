//! The embedded store's index settings (`storage.quantization`,
//! `storage.oversampling`, `storage.*_on_disk`, `storage.hnsw_*`,
//! `storage.segment_points`, `storage.search_threads`) as qdrant-edge
//! configuration, and back: what a store saved is read as
//! [`IndexSettings`].

use qdrant_edge::{
    BinaryQuantizationConfig, BinaryQuantizationQueryEncoding, EdgeConfig, EdgeOptimizersConfig,
    HnswIndexConfig, Memory, QuantizationConfig, QuantizationSearchParams,
    ScalarQuantizationConfig, ScalarType, SearchParams,
};

use super::super::{DENSE_VECTOR, LEXICAL_VECTOR};
use crate::config::{Quantization, StorageConfig};

/// The index settings a store holds (`storage.*` as it applied them).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct IndexSettings {
    /// `storage.quantization`.
    pub quantization: Quantization,
    /// `storage.vectors_on_disk`.
    pub vectors_on_disk: bool,
    /// `storage.lexical_on_disk`.
    pub lexical_on_disk: bool,
    /// `storage.hnsw_m`.
    pub hnsw_m: usize,
    /// `storage.hnsw_ef_construct`.
    pub hnsw_ef_construct: usize,
    /// `storage.segment_points` (as the segment size it was saved as).
    pub segment_points: usize,
}

impl From<&StorageConfig> for IndexSettings {
    /// The index settings a configuration asks for.
    fn from(s: &StorageConfig) -> Self {
        Self {
            quantization: s.quantization,
            vectors_on_disk: s.vectors_on_disk,
            lexical_on_disk: s.lexical_on_disk,
            hnsw_m: s.hnsw_m,
            hnsw_ef_construct: s.hnsw_ef_construct,
            segment_points: s.segment_points,
        }
    }
}

impl IndexSettings {
    /// The settings `config` asks for as a store of `dimension`-sized
    /// vectors saves them (the segment size rounded as the engine keeps
    /// it): what to compare with a store's saved settings.
    pub fn wanted(config: &StorageConfig, dimension: usize) -> Self {
        Self {
            segment_points: segment_points(segment_kb(config.segment_points, dimension), dimension),
            ..Self::from(config)
        }
    }
}

/// A segment's size as the optimisers count it: the KiB of its dense
/// vectors.
fn segment_kb(points: usize, dimension: usize) -> usize {
    (points * dimension.max(1) * 4).div_ceil(1024)
}

/// The points of `dimension`-sized vectors a segment of `kb` KiB holds.
fn segment_points(kb: usize, dimension: usize) -> usize {
    kb * 1024 / (dimension.max(1) * 4)
}

/// The index settings an engine configuration records.
pub(super) fn index_settings(config: &EdgeConfig, dimension: usize) -> IndexSettings {
    let on_disk = |memory: Option<Memory>| memory.is_some_and(|m| m.is_cold());
    let segment_kb = config
        .optimizers
        .as_ref()
        .and_then(|o| o.max_segment_size)
        .unwrap_or(0);
    IndexSettings {
        quantization: match &config.quantization_config {
            None => Quantization::None,
            Some(QuantizationConfig::Binary(_)) => Quantization::Binary,
            Some(_) => Quantization::Int8,
        },
        vectors_on_disk: on_disk(
            config
                .vectors
                .get(DENSE_VECTOR)
                .and_then(|v| v.memory_placement()),
        ),
        lexical_on_disk: on_disk(
            config
                .sparse_vectors
                .get(LEXICAL_VECTOR)
                .and_then(|v| v.memory_placement()),
        ),
        hnsw_m: config.hnsw_config().m,
        hnsw_ef_construct: config.hnsw_config().ef_construct,
        segment_points: segment_points(segment_kb, dimension),
    }
}

/// `config` (which names grace's two vectors) with every index setting:
/// where the vectors live, search pool, graph, quantisation and segment
/// size.
pub(super) fn tuned(mut config: EdgeConfig, settings: &StorageConfig) -> EdgeConfig {
    let mut dimension = 0;
    if let Some(dense) = config.vectors.get_mut(DENSE_VECTOR) {
        dense.memory = Some(placement(settings.vectors_on_disk));
        dimension = dense.size;
    }
    if let Some(lexical) = config.sparse_vectors.get_mut(LEXICAL_VECTOR) {
        lexical.memory = Some(placement(settings.lexical_on_disk));
    }
    config.max_search_threads = Some(pool_size(settings.search_threads));
    config.hnsw_config = Some(HnswIndexConfig {
        m: settings.hnsw_m,
        ef_construct: settings.hnsw_ef_construct,
        ..HnswIndexConfig::default()
    });
    config.quantization_config = quantization(settings.quantization);
    config.optimizers = Some(EdgeOptimizersConfig {
        max_segment_size: Some(segment_kb(settings.segment_points, dimension)),
        ..EdgeOptimizersConfig::default()
    });
    config
}

/// `config` with the quantised vectors where the saved store keeps them:
/// a store written before they moved to the page cache keeps them on the
/// heap rather than rebuild every segment at its next write (the engine
/// rebuilds on any change of the quantisation's configuration).
pub(super) fn keep_quantised_placement(mut config: EdgeConfig, saved: &EdgeConfig) -> EdgeConfig {
    if let (Some(wanted), Some(had)) = (
        config.quantization_config.as_mut(),
        saved.quantization_config.as_ref(),
    ) && std::mem::discriminant(wanted) == std::mem::discriminant(had)
    {
        *wanted = had.clone();
    }
    config
}

/// Where a component lives: read from disk when needed, or loaded.
fn placement(on_disk: bool) -> Memory {
    if on_disk {
        Memory::Cold
    } else {
        Memory::Cached
    }
}

/// The engine's quantisation for `storage.quantization`. The quantised
/// vectors are memory-mapped and read into the page cache when the store
/// opens (`Cached`), not copied onto the heap: every search reads them, so
/// they stay there, and under a memory limit the kernel can still take them
/// back (1M points: 370 MB that would otherwise push writing a 1M store
/// past 1 GiB).
// `always_ram` is the deprecated spelling of `memory`; it has to be named.
#[allow(deprecated)]
fn quantization(q: Quantization) -> Option<QuantizationConfig> {
    match q {
        Quantization::None => None,
        Quantization::Int8 => Some(
            ScalarQuantizationConfig {
                r#type: ScalarType::Int8,
                quantile: Some(0.99),
                always_ram: None,
                memory: Some(Memory::Cached),
            }
            .into(),
        ),
        Quantization::Binary => Some(
            BinaryQuantizationConfig {
                always_ram: None,
                memory: Some(Memory::Cached),
                encoding: None,
                // The question scored at 8 bits against the stored bits:
                // asymmetric, far closer to the true order than bits
                // against bits, for the price of one query a search.
                query_encoding: Some(BinaryQuantizationQueryEncoding::Scalar8Bits),
            }
            .into(),
        ),
    }
}

/// The search-time settings: the graph's beam and, with quantisation, how
/// many candidates are scored again with the full vectors.
pub(super) fn search_params(settings: &StorageConfig) -> SearchParams {
    SearchParams {
        hnsw_ef: Some(settings.hnsw_ef),
        quantization: Some(QuantizationSearchParams {
            ignore: false,
            rescore: Some(true),
            oversampling: Some(settings.oversampling),
        }),
        ..SearchParams::default()
    }
}

/// `params` for a first pass that ranks by the quantised scores alone, and
/// the oversampling its candidates are taken with (`rescore.rs`).
pub(super) fn quantised_only(params: &SearchParams) -> (SearchParams, f64) {
    let mut first = params.clone();
    let oversampling = match first.quantization.as_mut() {
        Some(q) => {
            q.rescore = Some(false);
            q.oversampling.take().unwrap_or(1.0)
        }
        None => 1.0,
    };
    (first, oversampling)
}

/// `storage.search_threads`, 0 resolved to the number of CPUs (given
/// explicitly: the engine would otherwise keep the count stored at creation).
pub(super) fn pool_size(search_threads: usize) -> usize {
    match search_threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `tuned` writes into an engine configuration reads back as the
    /// same settings, for every quantisation and placement.
    #[test]
    fn settings_round_trip_through_the_engine_configuration() {
        for (quantization, on_disk) in [
            (Quantization::None, false),
            (Quantization::Int8, true),
            (Quantization::Binary, true),
        ] {
            let settings = StorageConfig {
                quantization,
                vectors_on_disk: on_disk,
                lexical_on_disk: !on_disk,
                hnsw_m: 24,
                hnsw_ef_construct: 64,
                segment_points: 123_457,
                ..StorageConfig::default()
            };
            let config = EdgeConfig::builder()
                .vector(
                    DENSE_VECTOR,
                    qdrant_edge::EdgeVectorParams::builder(384, qdrant_edge::Distance::Cosine)
                        .build(),
                )
                .sparse_vector(
                    LEXICAL_VECTOR,
                    qdrant_edge::EdgeSparseVectorParams::builder().build(),
                )
                .build();
            let read = index_settings(&tuned(config, &settings), 384);
            assert_eq!(read, IndexSettings::from(&settings));
            assert_eq!(read, IndexSettings::wanted(&settings, 384));
            assert_eq!(read.segment_points, 123_457);
        }
    }

    /// With small vectors a KiB holds several points, so the segment size
    /// reads back rounded: `wanted` rounds the same way, so a store built
    /// with the configured settings is not reported as differing.
    #[test]
    fn wanted_settings_round_the_segment_size_as_the_engine_keeps_it() {
        let settings = StorageConfig {
            segment_points: 10_001,
            ..StorageConfig::default()
        };
        let config = EdgeConfig::builder()
            .vector(
                DENSE_VECTOR,
                qdrant_edge::EdgeVectorParams::builder(2, qdrant_edge::Distance::Cosine).build(),
            )
            .sparse_vector(
                LEXICAL_VECTOR,
                qdrant_edge::EdgeSparseVectorParams::builder().build(),
            )
            .build();
        let read = index_settings(&tuned(config, &settings), 2);
        assert_ne!(read.segment_points, 10_001, "8 bytes a point: 128 a KiB");
        assert_eq!(read, IndexSettings::wanted(&settings, 2));
    }

    /// Searches keep the configured beam and always score quantised
    /// candidates again with the full vectors.
    #[test]
    fn searches_rescore_with_the_configured_beam() {
        let params = search_params(&StorageConfig {
            hnsw_ef: 200,
            oversampling: 3.0,
            ..StorageConfig::default()
        });
        assert_eq!(params.hnsw_ef, Some(200));
        assert!(!params.exact);
        let q = params.quantization.expect("quantisation parameters");
        assert_eq!(
            (q.rescore, q.oversampling, q.ignore),
            (Some(true), Some(3.0), false)
        );
    }

    /// A store saved with its int8 vectors on the heap keeps them there
    /// when opened to write (any change would rebuild every segment); a
    /// changed quantisation is applied.
    #[test]
    // `always_ram` is the deprecated spelling of `memory`; it has to be named.
    #[allow(deprecated)]
    fn a_saved_quantised_placement_is_kept_unless_the_quantisation_changed() {
        let int8 = |memory| -> QuantizationConfig {
            ScalarQuantizationConfig {
                r#type: ScalarType::Int8,
                quantile: Some(0.99),
                always_ram: None,
                memory: Some(memory),
            }
            .into()
        };
        let config = |q: Option<QuantizationConfig>| {
            let mut c = EdgeConfig::builder().build();
            c.quantization_config = q;
            c
        };
        let wanted = config(quantization(Quantization::Int8));
        let kept = keep_quantised_placement(wanted.clone(), &config(Some(int8(Memory::Pinned))));
        assert_eq!(kept.quantization_config, Some(int8(Memory::Pinned)));
        let binary = config(quantization(Quantization::Binary));
        let changed = keep_quantised_placement(binary.clone(), &config(Some(int8(Memory::Pinned))));
        assert_eq!(changed.quantization_config, binary.quantization_config);
        let none = keep_quantised_placement(config(None), &config(Some(int8(Memory::Pinned))));
        assert_eq!(none.quantization_config, None);
        assert_eq!(wanted.quantization_config, Some(int8(Memory::Cached)));
    }
}
