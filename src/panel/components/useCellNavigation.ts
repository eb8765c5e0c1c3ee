import { FocusEvent, KeyboardEvent, MouseEvent, useCallback, useId, useLayoutEffect, useRef, useState } from 'react';

interface Options {
  /**
   * The key of each cell, in order: its minute's time. The active cell is kept by its key, so an
   * auto-refresh that shifts a rolling range keeps the tooltip on its minute, not on its place.
   */
  keys: readonly number[];
  /** Cells per visual row: ArrowUp and ArrowDown move by this many. */
  rowStep: number;
  /** Optional jumps for extra keys (e.g. "n"/"p"): the index to move to, or null for none. */
  jump?: (key: string, current: number) => number | null;
}

/**
 * Keyboard, mouse and tooltip state of a row of minute cells (the minute strip and the decision
 * track share it): one tab stop with aria-activedescendant; arrows move by one, up and down by a
 * row, PageUp and PageDown by an hour, Home and End to the ends; Enter or Space pins the tooltip,
 * Escape closes it; hover shows it, click pins it. The active cell is its minute: when new minutes
 * shift the cells it follows its minute, and when its minute leaves the range nothing is active.
 */
export function useCellNavigation({ keys, rowStep, jump }: Options) {
  const idPrefix = useId().replace(/:/g, '');
  const count = keys.length;
  const [activeKey, setActiveKey] = useState<number | null>(null);
  const [visible, setVisible] = useState(false);
  const [pinned, setPinned] = useState(false);
  const [anchor, setAnchor] = useState<{ x: number; y: number } | null>(null);

  const found = activeKey === null ? -1 : keys.indexOf(activeKey);
  const active = found >= 0 ? found : null;
  if (activeKey !== null && active === null) {
    // The active minute left the range: nothing is active, shown or pinned any more.
    setActiveKey(null);
    setVisible(false);
    setPinned(false);
  }

  const cellId = useCallback((index: number) => `${idPrefix}-cell-${index}`, [idPrefix]);
  const containerRef = useRef<HTMLDivElement>(null);

  // Anchor the tooltip to a cell (all cells are rendered, so the element exists).
  const anchorTo = (index: number, scroll: boolean) => {
    const el = document.getElementById(cellId(index));
    if (el) {
      if (scroll) {
        el.scrollIntoView?.({ block: 'nearest' });
      }
      const rect = el.getBoundingClientRect();
      setAnchor({ x: rect.left, y: rect.bottom });
    }
  };

  // New minutes move the active minute's cell (one place back in a rolling range, or to another
  // row): the tooltip follows it. Nothing to do, and no render, when the cell stayed in place.
  useLayoutEffect(() => {
    const cell = visible && active !== null ? containerRef.current?.querySelector(`[data-index="${active}"]`) : null;
    if (cell) {
      const rect = cell.getBoundingClientRect();
      if (rect.left !== anchor?.x || rect.bottom !== anchor?.y) {
        const next = { x: rect.left, y: rect.bottom };
        setAnchor(next);
      }
    }
  }, [visible, active, keys, anchor]);

  const select = (index: number) => {
    setActiveKey(keys[index]);
    setVisible(true);
  };

  const move = (index: number) => {
    const next = Math.max(0, Math.min(count - 1, index));
    select(next);
    anchorTo(next, true);
  };

  const onKeyDown = (event: KeyboardEvent<HTMLElement>) => {
    const current = active ?? 0;
    const steps: Record<string, number> = {
      ArrowRight: 1,
      ArrowLeft: -1,
      ArrowDown: rowStep,
      ArrowUp: -rowStep,
      PageDown: 60,
      PageUp: -60,
    };
    const jumped = jump && !event.ctrlKey && !event.metaKey && !event.altKey ? jump(event.key, current) : null;
    if (event.key in steps) {
      move(active === null ? 0 : current + steps[event.key]);
    } else if (jumped !== null) {
      move(jumped);
    } else if (event.key === 'Home') {
      move(0);
    } else if (event.key === 'End') {
      move(count - 1);
    } else if (event.key === 'Enter' || event.key === ' ') {
      if (active === null) {
        move(0);
      }
      setVisible(true);
      setPinned((p) => !p);
    } else if (event.key === 'Escape') {
      setPinned(false);
      setVisible(false);
    } else {
      return;
    }
    event.preventDefault();
  };

  const indexFromEvent = (target: EventTarget): number | null => {
    const cell = (target as HTMLElement).closest?.('[data-index]');
    const index = cell ? Number(cell.getAttribute('data-index')) : NaN;
    return Number.isInteger(index) && index >= 0 && index < count ? index : null;
  };

  const containerProps = {
    ref: containerRef,
    tabIndex: 0,
    'aria-activedescendant': active !== null ? cellId(active) : undefined,
    onKeyDown,
    onFocus: () => {
      if (count > 0) {
        move(active ?? 0);
      }
    },
    onBlur: (event: FocusEvent<HTMLElement>) => {
      if (!pinned && !event.currentTarget.contains(event.relatedTarget as Node | null)) {
        setVisible(false);
      }
    },
    onMouseOver: (event: MouseEvent<HTMLElement>) => {
      const index = indexFromEvent(event.target);
      if (index !== null && !pinned && index !== active) {
        select(index);
        anchorTo(index, false);
      } else if (index !== null && !pinned) {
        setVisible(true);
      }
    },
    onMouseLeave: () => !pinned && setVisible(false),
    onClick: (event: MouseEvent<HTMLElement>) => {
      const index = indexFromEvent(event.target);
      if (index !== null) {
        select(index);
        anchorTo(index, false);
        setPinned((p) => !(p && index === active));
      }
    },
  };

  return {
    active,
    visible: visible && active !== null,
    pinned: pinned && active !== null,
    anchor,
    cellId,
    containerProps,
  };
}
