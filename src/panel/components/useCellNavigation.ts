import { FocusEvent, KeyboardEvent, MouseEvent, useCallback, useId, useState } from 'react';

interface Options {
  /** Number of cells. */
  count: number;
  /** Cells per visual row: ArrowUp and ArrowDown move by this many. */
  rowStep: number;
  /** Optional jumps for extra keys (e.g. "n"/"p"): the index to move to, or null for none. */
  jump?: (key: string, current: number) => number | null;
}

/**
 * Keyboard, mouse and tooltip state of a row of minute cells (the minute strip and the decision
 * track share it): one tab stop with aria-activedescendant; arrows move by one, up and down by a
 * row, PageUp and PageDown by an hour, Home and End to the ends; Enter or Space pins the tooltip,
 * Escape closes it; hover shows it, click pins it.
 */
export function useCellNavigation({ count, rowStep, jump }: Options) {
  const idPrefix = useId().replace(/:/g, '');
  const [active, setActive] = useState<number | null>(null);
  const [visible, setVisible] = useState(false);
  const [pinned, setPinned] = useState(false);
  const [anchor, setAnchor] = useState<{ x: number; y: number } | null>(null);

  const cellId = useCallback((index: number) => `${idPrefix}-cell-${index}`, [idPrefix]);

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

  const move = (index: number) => {
    const next = Math.max(0, Math.min(count - 1, index));
    setActive(next);
    setVisible(true);
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
    return cell ? Number(cell.getAttribute('data-index')) : null;
  };

  const containerProps = {
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
        setActive(index);
        setVisible(true);
        anchorTo(index, false);
      } else if (index !== null && !pinned) {
        setVisible(true);
      }
    },
    onMouseLeave: () => !pinned && setVisible(false),
    onClick: (event: MouseEvent<HTMLElement>) => {
      const index = indexFromEvent(event.target);
      if (index !== null) {
        setActive(index);
        setVisible(true);
        anchorTo(index, false);
        setPinned((p) => !(p && index === active));
      }
    },
  };

  return { active, visible, pinned, anchor, cellId, containerProps };
}
